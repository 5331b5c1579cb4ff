// The transport of URL reads in Node when no `fetch` option is given: node:http / node:https
// with one keep-alive Agent per protocol, shaped like fetch() for what sources.js and
// hub.js use (status, statusText, ok, headers.get, body.getReader / cancel, arrayBuffer,
// json). A small localhost request costs ~0.5–1.1 ms here against ~1.4–2.1 ms through
// Node's fetch (undici's Request, Headers and body streams: docs/benchmarks.md, "Small
// opens"), and one request is most of a small header's open(url).
// Where it matters it does what fetch does: redirects (301/302/303/307/308, at most 20,
// relative Locations; Authorization, Proxy-Authorization and Cookie dropped on a
// cross-origin hop), an AbortSignal (rejects with its reason, destroys the request),
// failures as TypeError('fetch failed', { cause }) with the socket's own error, and
// `Accept-Encoding: identity` (fetch sends it with a Range; nothing here decodes a body,
// so ranges are the file's bytes). Policy (which statuses are errors, the messages,
// Content-Range) stays in sources.js. Node-only: node.js loads it, index.js never does.

// Each protocol's module and keep-alive Agent, made by its first request. Not imported
// statically: the bundled command (dist/amn.cjs) holds this file, and a static import there
// would load node:http, and node:https with its TLS and crypto modules, at every start,
// local files too (~6 ms of a cold `amn inspect`, docs/benchmarks.md "Cold start").
// Idle keep-alive sockets are unref'd by the Agent (keepSocketAlive), so they do not keep
// the process alive once the work is done; a socket in use is ref'd again.
const transports = {};
const transportFor = (protocol) => (transports[protocol] ||= (protocol === 'https:' ? import('node:https') : import('node:http'))
  .then(({ default: module }) => ({ module, agent: new module.Agent({ keepAlive: true }) })));

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 20;  // fetch's limit (the 21st redirect is a network error)
// What fetch removes from a request that a redirect sends to another origin.
const CROSS_ORIGIN_DROPPED = ['authorization', 'proxy-authorization', 'cookie'];
// A body left unread is drained when at most this long (its socket is then reused), else
// its socket is destroyed: a server that ignored Range must not send us the whole file.
// A GGUF's first request (1 MiB), left once a small header is parsed, is drained: a new
// connection would cost a TLS handshake, two round trips, and the drain delays no read.
const DRAIN_MAX_BYTES = 1024 * 1024;
// arrayBuffer() allocates the announced Content-Length up front up to this (a first read,
// a multi-range answer); a longer body is gathered as it comes.
const MAX_PREALLOCATED = 16 * 1024 * 1024;

const failed = (cause) => new TypeError('fetch failed', { cause });
const abortReason = (signal) => signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
const noop = () => {};

// fetch(url, { headers, signal }) for GETs.
export async function nodeFetch(input, init = {}) {
  const { signal } = init;
  if (signal?.aborted) throw abortReason(signal);
  let url = new URL(String(input instanceof URL ? input.href : input));
  if (url.username || url.password) throw new TypeError(`Request cannot be constructed from a URL that includes credentials: ${url.href}`);
  const headers = requestHeaders(init.headers);
  for (let redirects = 0; ; redirects++) {
    const msg = await send(url, headers, signal);
    const location = REDIRECT_STATUSES.has(msg.statusCode) ? msg.headers.location : undefined;
    if (location === undefined) return new NodeResponse(msg, url, redirects > 0, signal);
    discard(msg);
    if (redirects === MAX_REDIRECTS) throw failed(new Error('redirect count exceeded'));
    let next;
    try { next = new URL(location, url); } catch (err) { throw failed(err); }
    if (next.protocol !== 'http:' && next.protocol !== 'https:') throw failed(new Error('URL scheme must be a HTTP(S) scheme'));
    if (next.origin !== url.origin) for (const name of CROSS_ORIGIN_DROPPED) delete headers[name];
    url = next;
  }
}

// The given headers (a Headers, a record or pairs), lower-cased, with fetch's defaults.
// (No `instanceof Headers`: in Node the first use of that global loads undici.)
function requestHeaders(given) {
  const out = { accept: '*/*', 'user-agent': 'node' };
  const pairs = given == null ? [] : typeof given[Symbol.iterator] === 'function' ? given : Object.entries(given);
  for (const [k, v] of pairs) out[k.toLowerCase()] = String(v);
  out['accept-encoding'] = 'identity';
  return out;
}

// One request; resolves with its IncomingMessage once the status and headers are in. The
// abort listener lives until the response is done (its body read, drained or destroyed).
async function send(url, headers, signal) {
  const { module, agent } = await transportFor(url.protocol);
  if (signal?.aborted) throw abortReason(signal);
  return new Promise((resolve, reject) => {
    let req;
    let msg = null;
    const onAbort = () => {
      const reason = abortReason(signal);
      if (msg) msg.destroy(reason);
      else req?.destroy(reason);
    };
    const settle = () => signal?.removeEventListener('abort', onAbort);
    try {
      req = module.request(url, { headers, agent });
    } catch (err) {
      reject(failed(err));  // e.g. a header value Node refuses
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('response', (res) => {
      msg = res;
      res.on('error', noop);  // surfaced by the reader; an unread body's error must not throw
      res.once('close', settle);
      resolve(res);
    });
    req.on('error', (err) => {
      if (msg) return;  // after the response: the body's reader reports it
      settle();
      if (signal?.aborted) reject(abortReason(signal));
      // A kept-alive socket the server closed as it was reused: the request never reached
      // it, so send it again (on another socket; a GET is idempotent), as Node's docs advise.
      else if (req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) send(url, headers, signal).then(resolve, reject);
      else reject(failed(asFetchReports(err)));
    });
    req.end();
  });
}

// Node reports a TLS handshake that fails under the request's first write as
// "write EPROTO <OpenSSL's message>"; fetch (undici writes after the handshake) gives
// OpenSSL's message alone, which is what a message should say.
function asFetchReports(err) {
  const prefix = 'write EPROTO ';
  if (err?.code !== 'EPROTO' || !err.message?.startsWith(prefix)) return err;
  return Object.assign(new Error(err.message.slice(prefix.length), { cause: err }), { code: err.code });
}

// An unread (or partly read) body: drained when short, so its socket can be reused, else
// its socket destroyed.
function discard(msg) {
  if (msg.complete || msg.destroyed) return;
  if (Number(msg.headers['content-length']) <= DRAIN_MAX_BYTES) msg.resume();
  else msg.destroy();
}

class NodeHeaders {
  #h;
  constructor(h) { this.#h = h; }
  get(name) {
    const v = this.#h[name.toLowerCase()];
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  }
  has(name) { return this.#h[name.toLowerCase()] !== undefined; }
  *[Symbol.iterator]() { for (const k of Object.keys(this.#h)) yield [k, this.get(k)]; }
}

class NodeResponse {
  #msg;
  #signal;
  #used = false;
  constructor(msg, url, redirected, signal) {
    this.#msg = msg;
    this.#signal = signal;
    this.status = msg.statusCode;
    this.statusText = msg.statusMessage ?? '';
    this.ok = this.status >= 200 && this.status < 300;
    this.url = url.href;
    this.redirected = redirected;
    this.headers = new NodeHeaders(msg.headers);
    const self = this;
    this.body = {
      getReader: () => self.#reader(),
      async cancel() { discard(msg); },
    };
  }

  get bodyUsed() { return this.#used; }

  #take() {
    if (this.#used) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
  }

  // The body's chunks as a stream reader's { value, done } (plain Uint8Array views).
  #reader() {
    this.#take();
    const msg = this.#msg;
    const it = msg[Symbol.asyncIterator]();
    return {
      read: async () => {
        let next;
        try {
          next = await it.next();
        } catch (err) {
          throw this.#bodyError(err);
        }
        if (next.done) return { done: true, value: undefined };
        const b = next.value;
        return { done: false, value: new Uint8Array(b.buffer, b.byteOffset, b.byteLength) };
      },
      async cancel() { discard(msg); },
      releaseLock: noop,
    };
  }

  // Gathered from 'data' events (an async iterator costs a promise per chunk), into one
  // buffer of the announced length when there is one.
  arrayBuffer() {
    this.#take();
    const msg = this.#msg;
    return new Promise((resolve, reject) => {
      const announced = Number(msg.headers['content-length']);
      let whole = Number.isSafeInteger(announced) && announced <= MAX_PREALLOCATED ? new Uint8Array(announced) : null;
      const chunks = [];
      let length = 0;
      let ended = false;
      msg.on('data', (chunk) => {
        if (whole && length + chunk.byteLength <= whole.byteLength) {
          whole.set(chunk, length);
        } else {
          if (whole) { chunks.push(whole.subarray(0, length)); whole = null; }
          chunks.push(chunk);
        }
        length += chunk.byteLength;
      });
      msg.once('end', () => {
        ended = true;
        if (whole) { resolve(length === whole.byteLength ? whole.buffer : whole.slice(0, length).buffer); return; }
        const out = new Uint8Array(length);
        let at = 0;
        for (const c of chunks) { out.set(c, at); at += c.byteLength; }
        resolve(out.buffer);
      });
      msg.once('error', (err) => reject(this.#bodyError(err)));
      msg.once('close', () => { if (!ended) reject(this.#bodyError(new Error('other side closed'))); });
    });
  }

  async text() { return new TextDecoder().decode(await this.arrayBuffer()); }
  async json() { return JSON.parse(await this.text()); }

  // As fetch: an abort rejects with the signal's reason; a body cut short is 'terminated'.
  #bodyError(err) {
    if (this.#signal?.aborted) return abortReason(this.#signal);
    return new TypeError('terminated', { cause: err });
  }
}
