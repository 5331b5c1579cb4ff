// Byte sources that work in every environment: memory, Blob/File, a list of Files
// (a dropped folder) and URLs read with HTTP Range. Each file is a FileRef:
//   { name, size, read(offset, length, signal) -> Promise<Uint8Array>, close?() }
// A resolved source is { entry, extras, afterShards?, find, missing? }: the entry file,
// files declared right after it, files declared after the shards an index names
// (the config files), a lookup for the files the core asks for by name (need_files), and
// the message for one that is absent.
import { AmnError, asIoError, throwIfAborted } from './errors.js';

// No extension: the core tells the format by content (safetensors, GGUF, NPY, ZIP, pickle).
const DEFAULT_NAME = 'model';

export function memoryFile(bytes, name = DEFAULT_NAME) {
  const u8 = bytes instanceof Uint8Array ? bytes
    : ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    : new Uint8Array(bytes);
  return {
    name,
    size: u8.byteLength,
    // subarray, not slice: the caller copies straight into WASM memory.
    async read(offset, length) { return u8.subarray(offset, offset + length); },
  };
}

// A Blob or File, read through BYOB readers of its byte stream into ArrayBuffers that the
// caller hands back with recycle() once it has copied the bytes on (into WASM memory), so
// reading makes no garbage: `slice().arrayBuffer()` makes a fresh ArrayBuffer per piece,
// which V8 frees only at a full collection (started by 64 MiB of new external memory,
// finished later), and that garbage grew a Chromium tab by 87–213 MiB while a 1 GiB tensor
// was read in 4 MiB pieces. A stream stays open where its read ended, for the next read
// that starts there (the core reads a tensor's pieces in order): a stream per piece costs
// its own garbage and is ~7× slower in Chromium (docs/web.md, "Bounded detail"). Reads
// under STREAM_MIN_BYTES (headers, an archive's member headers), and every read where
// Blob.stream() is not a byte stream, are slice().arrayBuffer().
export function blobFile(blob, name) {
  const label = `reading ${name || blob.name || 'blob'}`;
  const spare = [];  // buffers handed back by recycle(), at most MAX_SPARE_BUFFERS
  const open = new Map();  // position -> a BYOB reader whose next byte is there (idle)
  const take = (length) => {  // the smallest spare that holds `length`, or a new buffer
    let best = -1;
    spare.forEach((b, i) => { if (b.byteLength >= length && (best < 0 || b.byteLength < spare[best].byteLength)) best = i; });
    return best < 0 ? new ArrayBuffer(length) : spare.splice(best, 1)[0];
  };
  const readerAt = (offset) => {
    const kept = open.get(offset);
    if (kept) { open.delete(offset); return kept; }
    return byobReader(blob.slice(offset));
  };
  const keep = (position, reader) => {
    if (position >= blob.size) { reader.cancel().catch(() => {}); return; }
    open.set(position, reader);
    if (open.size > MAX_OPEN_STREAMS) {
      const [oldest, r] = open.entries().next().value;
      open.delete(oldest);
      r.cancel().catch(() => {});
    }
  };
  return {
    name: name || blob.name || DEFAULT_NAME,
    size: blob.size,
    async read(offset, length, signal) {
      throwIfAborted(signal);
      try {
        const reader = length >= STREAM_MIN_BYTES ? readerAt(offset) : null;
        if (!reader) return new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
        const bytes = await readExactly(reader, take(length), length, signal);
        keep(offset + length, reader);
        return bytes;
      } catch (err) {
        throw asIoError(err, label, signal);
      }
    },
    // The bytes of a read() are copied on: its buffer may take the next read.
    // The smallest spare goes when there are too many: a header's small reads must not
    // crowd out the buffer the pieces of a tensor take in turn.
    recycle(bytes) {
      if (bytes.byteOffset !== 0) return;
      spare.push(bytes.buffer);
      if (spare.length > MAX_SPARE_BUFFERS) spare.splice(spare.indexOf(spare.reduce((a, b) => (b.byteLength < a.byteLength ? b : a))), 1);
    },
    async close() {
      const readers = [...open.values()];
      open.clear();
      spare.length = 0;
      await Promise.allSettled(readers.map((r) => r.cancel()));
    },
  };
}

// Buffers a Blob keeps for its next reads (session.js reads a few ranges at once), each as
// large as the largest read it served; streams it keeps open for the next read.
const MAX_SPARE_BUFFERS = 8;
const MAX_OPEN_STREAMS = 4;
// A stream reads ahead (Chromium fills a 2 MiB data pipe from the file), which a small
// read that is not followed by the next one would waste; its garbage is small anyway.
const STREAM_MIN_BYTES = 64 * 1024;

function byobReader(blob) {
  try {
    return blob.stream().getReader({ mode: 'byob' });
  } catch {
    return null;  // not a byte stream
  }
}

// The next `length` bytes of `reader`'s stream, into `buffer`. Each read transfers the
// buffer (the old ArrayBuffer object is detached; its memory moves to the new one). A
// failed or cancelled read cancels the stream.
async function readExactly(reader, buffer, length, signal) {
  const cancel = () => { reader.cancel().catch(() => {}); };
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    let got = 0;
    while (got < length) {
      // `min`: one read fills the view (Chromium otherwise answers ~150 KiB a read, and
      // each read's promise and views are garbage too); ignored where unknown.
      const { value, done } = await reader.read(new Uint8Array(buffer, got, length - got), { min: length - got });
      throwIfAborted(signal);
      if (done) throw new Error(`short read (${got} of ${length} bytes): did the file change?`);
      buffer = value.buffer;
      got += value.byteLength;
    }
    return new Uint8Array(buffer, 0, length);
  } catch (err) {
    cancel();
    throw err;
  } finally {
    signal?.removeEventListener('abort', cancel);
  }
}

// Which of a folder's files make the model, and the config files read beside a model
// (transformers' config.json, then the quantizers' own, in the order they are declared):
// the core's own rules (session/open.h, the ones the native CLI uses), set once the core
// is loaded. The entry comes first; an index or a GGUF shard names the rest itself
// (need_files), the config files ride along.
// Which sources are URLs and which entries are indexes (naming their shards) are the
// core's rules too.
let core = null;
let configFiles = [];
export function useCore(M) {
  if (core === M) return;  // once per module, not per open()
  core = M;
  configFiles = JSON.parse(M.configFileNames());
}
export const configFileNames = () => configFiles;
const loaded = () => {
  if (!core) throw new AmnError('internal', 'the core is not loaded');
  return core;
};
// Both of the core's prefixes (http:// or https://, ollama:) hold a colon: a string
// without one (most paths) is neither, without a string copied into WASM memory per open.
const mayHavePrefix = (s) => String(s).includes(':');
export const isUrl = (s) => mayHavePrefix(s) && loaded().isUrl(s);
export const entryIsIndex = (name) => loaded().entryIsIndex(name);
export const isOllamaSpec = (s) => typeof s === 'string' && mayHavePrefix(s) && loaded().isOllamaSpec(s);
// One step of resolving an `ollama:` name (npm/lib/ollama.js drives the loop).
export function ollamaStep(facts, manifest) {
  const st = JSON.parse(loaded().ollamaStep(JSON.stringify(facts), manifest));
  if (!st.ok) throw new AmnError(st.code, st.message);
  return st;
}
// The refusal of a folder without a model file, worded by the core.
export function noModelFiles(folder) {
  const st = JSON.parse(loaded().noModelFiles(folder));
  return new AmnError(st.code, st.message);
}

export function chooseFiles(names) {
  const files = JSON.parse(loaded().modelFilesInFolder(JSON.stringify([...names])));
  const model = files.filter((n) => !configFiles.includes(n));
  if (model.length === 0) return null;
  const configs = files.filter((n) => configFiles.includes(n));
  const viaIndex = entryIsIndex(model[0]);
  return { entry: model[0], shards: viaIndex ? [] : model.slice(1), configs, viaIndex };
}

// A dropped folder or a multi-select: shards + index + the config files.
export function fileListSource(list) {
  const byName = new Map();
  for (const f of list) {
    if (!(f instanceof Blob)) throw new AmnError('invalid_argument', 'open(): an array source must hold File/Blob objects');
    byName.set(baseName(f.name || ''), f);
  }
  const choice = chooseFiles(byName.keys());
  if (!choice) throw new AmnError('invalid_argument', 'open(): no model file among the given files');
  const ref = (n) => blobFile(byName.get(n), n);
  const configs = choice.configs.map(ref);
  // The native CLI's order: entry, shards, the config files.
  return {
    entry: ref(choice.entry),
    extras: choice.viaIndex ? [] : [...choice.shards.map(ref), ...configs],
    afterShards: async () => (choice.viaIndex ? configs : []),
    find: async (n) => (byName.has(n) ? ref(n) : null),
    missing: (n) => `shard ${n} named by ${choice.entry} is not among the given files`,
  };
}

export function baseName(path) {
  const parts = String(path).split(/[\\/]/);
  return parts[parts.length - 1];
}

// ---- HTTP Range -------------------------------------------------------------------

function urlName(url) {
  const last = url.pathname.split('/').filter(Boolean).pop() || DEFAULT_NAME;
  try { return decodeURIComponent(last); } catch { return last; }
}

export async function request(fetchFn, url, init, signal) {
  throwIfAborted(signal);
  try {
    return await fetchFn(url, { ...init, signal });
  } catch (err) {
    throw asIoError(err, `fetch ${url} failed`, signal, blockedHint(err, url));
  }
}

// A browser's fetch() says only "Failed to fetch" (Chromium), "NetworkError when attempting
// to fetch resource." (Firefox) or "Load failed" (Safari) when a server is unreachable or
// when it does not allow another origin to read it (CORS): it may not tell which. Say both.
function blockedHint(err, url) {
  const here = globalThis.location?.origin;
  if (!(err instanceof TypeError) || !here || here === 'null') return '';
  let there;
  try { there = new URL(url).origin; } catch { return ''; }
  if (there === here) return ' (the server could not be reached)';
  return ` (the server could not be reached, or it does not let pages from ${here} read it: `
    + 'reading a file on another site needs CORS headers from its server: Access-Control-Allow-Origin, '
    + 'Access-Control-Allow-Headers: Range and Access-Control-Expose-Headers: Content-Range, Content-Length)';
}

// The first request of a URL is a ranged GET (no HEAD) of the core's first window for the
// file's name (firstReadBytes, from the format registry: 1 MiB for a GGUF file, 64 KiB,
// the sniff window, for the others). Its Content-Range gives the size, and its body
// answers the core's reads that fall inside it, so a header that fits costs one request.
// Of a larger file, the body is taken only as far as those reads go (bodyPrefix): a small
// header is parsed as soon as its bytes arrive, and the rest is left once the model is open.
// A server that ignores Range answers 200 with the whole file: fine for a file that
// small, an io error otherwise (its body is cancelled, not downloaded).
export const firstReadBytes = (name) => loaded().firstReadBytes(name);

async function firstRead(fetchFn, url, signal, optional, name) {
  const want = firstReadBytes(name);
  const res = await request(fetchFn, url, { headers: { Range: `bytes=0-${want - 1}` } }, signal);
  if (res.status === 404 && optional) { await res.body?.cancel(); return null; }
  const total = /\/(\d+)\s*$/.exec(res.headers.get('content-range') || '');
  if (res.status === 416 && total) { await res.body?.cancel(); return { size: Number(total[1]), head: heldPrefix(new Uint8Array(0)) }; }
  if (res.status === 206) {
    const started = /bytes\s+(\d+)-/.exec(res.headers.get('content-range') || '');
    if (!total || !started || Number(started[1]) !== 0) {
      await res.body?.cancel();
      throw new AmnError('io', `${url}: cannot tell the file size (Content-Range "${res.headers.get('content-range') ?? ''}"`
        + ' on a ranged GET; from another origin the server must expose it: Access-Control-Expose-Headers: Content-Range)');
    }
    // Read whole before parsing: a first request no larger than what the parser reads
    // first (the core's firstReadStreamed), and a file no larger than the first request (a
    // body the size of the whole file costs little more to finish; its tensors are read
    // from it).
    const size = Number(total[1]);
    if (size <= want || !loaded().firstReadStreamed(name)) return { size, head: heldPrefix(await bodyOf(res, url, signal)) };
    return { size, head: bodyPrefix(res, want, url, signal) };
  }
  if (res.status === 200) {
    const length = res.headers.get('content-length');
    if (length === null || Number(length) > want || res.headers.get('content-encoding')) {
      await res.body?.cancel();
      throw new AmnError('io', `${url}: the server ignored the Range header (HTTP 200 for bytes 0-${want - 1}); `
        + 'reading a model over HTTP needs a server with Range support');
    }
    // The whole file: kept whole, as no later request can ask for a part of it.
    const head = await bodyOf(res, url, signal);
    return { size: head.byteLength, head: heldPrefix(head) };
  }
  await res.body?.cancel();
  throw new AmnError('io', `${url}: HTTP ${res.status} ${res.statusText}`.trim());
}

// What the first read's body holds after the model is open: at most this much of it is
// kept for later reads (tensor data of a small file), so a model of many shards does not
// hold a first window per shard.
const FIRST_READ_KEPT = 64 * 1024;

// A first read held whole (bodyPrefix's interface).
function heldPrefix(bytes) {
  return { bytes, capacity: bytes.byteLength, async until() {}, settle() {} };
}

// The first `capacity` bytes of a response's body, read as far as callers need: until(end)
// resolves once bytes [0, end) have arrived (or the body ended short: then a read past
// `bytes` fetches the rest). settle() cancels what has not arrived and keeps at most
// FIRST_READ_KEPT bytes.
function bodyPrefix(res, capacity, url, signal) {
  const reader = res.body?.getReader() ?? null;
  let buf = new Uint8Array(capacity);
  let got = 0;
  let live = reader !== null;
  let pulling = null;
  const stop = () => {
    if (!live) return;
    live = false;
    reader.cancel().catch(() => {});
  };
  const pull = async () => {
    let next;
    try {
      next = await reader.read();
    } catch (err) {
      live = false;
      throw asIoError(err, `reading ${url}`, signal);
    }
    if (next.done) { live = false; return; }
    const chunk = next.value;
    const take = Math.min(chunk.byteLength, capacity - got);
    buf.set(take === chunk.byteLength ? chunk : chunk.subarray(0, take), got);
    got += take;
    if (got === capacity) {
      // The body should end here: its end is read before the bytes are used (a kept-alive
      // socket is free for the next request only once its end is seen), and a longer body
      // than asked for is cancelled.
      live = false;
      const end = await reader.read().catch(() => ({ done: true }));
      if (!end.done) reader.cancel().catch(() => {});
    }
  };
  return {
    get bytes() { return buf.subarray(0, got); },
    capacity,
    async until(end) {
      while (live && got < end) {
        pulling ??= pull().finally(() => { pulling = null; });
        await pulling;
      }
    },
    settle() {
      stop();
      buf = buf.slice(0, Math.min(got, FIRST_READ_KEPT));
      got = buf.byteLength;
    },
  };
}

async function bodyOf(res, url, signal) {
  try {
    return new Uint8Array(await res.arrayBuffer());
  } catch (err) {
    throw asIoError(err, `reading ${url}`, signal);
  }
}

// The first `length` bytes of a response's body as put(bytes, at) calls, chunk by chunk as
// the stream delivers them (bytes past `length` are dropped, as a truncated body was).
async function streamBody(res, length, put, href, offset, signal) {
  const reader = res.body?.getReader();
  let got = 0;
  try {
    while (got < length) {
      const next = reader ? await reader.read() : { done: true };
      if (next.done) {
        throw new AmnError('io', `${href}: short read (${got} of ${length} bytes at ${offset})`, { offset });
      }
      const chunk = next.value;
      const take = Math.min(chunk.byteLength, length - got);
      put(take === chunk.byteLength ? chunk : chunk.subarray(0, take), got);
      got += take;
    }
    if (reader && !(await reader.read()).done) await reader.cancel();  // a longer body than asked for
  } catch (err) {
    reader?.cancel().catch(() => {});
    throw asIoError(err, `reading ${href}`, signal);
  }
}

// Ranges asked for in one multi-range request (`Range: bytes=a-b,c-d,...`, answered as
// multipart/byteranges): the local headers of a ZIP's members come in one or two requests
// instead of one each. At most 200: Apache's default MaxRanges (more and it answers the
// whole file); 200 ranges of 10-digit offsets make a header of ~4.4 KB, within the 8 KiB
// header lines of nginx and Apache. A server that answers such a request with anything but
// 206 (S3 sends the whole file: 200), or a browser that cannot send it (the preflight a
// cross-origin multi-range request needs is refused), makes the file fall back to one
// request per range from then on.
export const MAX_RANGES_PER_REQUEST = 200;
const SINGLE_READ_CONCURRENCY = 8;

export async function urlFile(url, { fetch: fetchFn, signal, optional = false } = {}) {
  const href = url.href;
  const first = await firstRead(fetchFn, href, signal, optional, urlName(url));
  if (first === null) return null;
  const { size, head: prefix } = first;
  // The first read's bytes once those in [0, end) have arrived (or all it will hold).
  const held = async (end) => {
    await prefix.until(Math.min(end, prefix.capacity));
    return prefix.bytes;
  };
  let multiRange = true;  // until the server (or the browser) shows otherwise
  const file = {
    name: urlName(url),
    size,
    url: href,
    maxRanges: MAX_RANGES_PER_REQUEST,
    async read(offset, length, sig) {
      const head = await held(offset + length);
      if (offset + length <= head.byteLength) return head.subarray(offset, offset + length);
      const out = new Uint8Array(length);
      await file.readTo(offset, length, (bytes, at) => out.set(bytes, at), sig);
      return out;
    },
    // The range's bytes as put(bytes, at) calls in order (`at` counts from `offset`): what
    // the first read holds, then the response body's chunks as they arrive, never gathered
    // into a buffer of their own (session.js puts them straight into WASM memory:
    // `res.arrayBuffer()` made a fresh ArrayBuffer per range, garbage as large as the range).
    async readTo(offset, length, put, sig) {
      const head = await held(offset + length);
      let at = 0;
      if (offset < head.byteLength) {
        at = Math.min(length, head.byteLength - offset);
        put(head.subarray(offset, offset + at), 0);
        if (at === length) return;
      }
      const from = offset + at;
      const end = offset + length - 1;
      const res = await request(fetchFn, href, { headers: { Range: `bytes=${from}-${end}` } }, sig);
      const whole = from === 0 && length === size;
      if (res.status === 200 && !whole) {
        await res.body?.cancel();
        throw new AmnError('io', `${href}: the server ignored the Range header (HTTP 200 for bytes ${from}-${end}); `
          + 'reading a model over HTTP needs a server with Range support', { offset: from });
      }
      if (res.status !== 206 && res.status !== 200) {
        await res.body?.cancel();
        throw new AmnError('io', `${href}: HTTP ${res.status} ${res.statusText} for bytes ${from}-${end}`.trim(), { offset: from });
      }
      const started = /bytes\s+(\d+)-/.exec(res.headers.get('content-range') || '');
      if (res.status === 206 && started && Number(started[1]) !== from) {
        await res.body?.cancel();
        throw new AmnError('io', `${href}: the server answered bytes ${started[1]}- for a request of ${from}-${end}`, { offset: from });
      }
      await streamBody(res, length - at, (bytes, k) => put(bytes, at + k), `${href}`, from, sig);
    },
    // Several ranges ({offset, length}, at most maxRanges) → their bytes, in order.
    async readMany(ranges, sig) {
      const head = await held(Math.max(0, ...ranges.filter((r) => r.offset < prefix.capacity).map((r) => r.offset + r.length)));
      const out = new Array(ranges.length);
      const rest = [];
      ranges.forEach((r, i) => {
        if (r.offset + r.length <= head.byteLength) out[i] = head.subarray(r.offset, r.offset + r.length);
        else rest.push(i);
      });
      // What the first read holds is not asked for again: a range that starts inside it is
      // fetched from its end, and completed from it below.
      const ask = (i) => {
        const from = Math.max(ranges[i].offset, head.byteLength);
        return { offset: from, length: ranges[i].offset + ranges[i].length - from };
      };
      let parts = [];
      if (multiRange && rest.length > 1) {
        parts = await multiRangeParts(fetchFn, href, rest.map(ask), sig);
        if (parts === null) { multiRange = false; parts = []; }
      }
      const single = [];
      for (const i of rest) {
        const { offset, length } = ask(i);
        const p = parts.find((x) => x.start <= offset && offset + length <= x.start + x.bytes.byteLength);
        if (p) out[i] = withHead(head, ranges[i].offset, ranges[i].length, p.bytes.subarray(offset - p.start, offset - p.start + length));
        else single.push(i);
      }
      // What one multi-range request did not bring (or all of it, without one): a request each.
      let next = 0;
      const worker = async () => {
        while (next < single.length) {
          const i = single[next++];
          out[i] = await file.read(ranges[i].offset, ranges[i].length, sig);
        }
      };
      await Promise.all(Array.from({ length: Math.min(SINGLE_READ_CONCURRENCY, single.length) }, worker));
      return out;
    },
    // The model is open: what the first request has not brought is not waited for.
    settle() { prefix.settle(); },
    close() { prefix.settle(); },
  };
  // A range that starts inside the first read: its start from there, the rest fetched.
  const withHead = (head, offset, length, fetched) => {
    if (offset >= head.byteLength) return fetched;
    const out = new Uint8Array(length);
    out.set(head.subarray(offset));
    out.set(fetched, head.byteLength - offset);
    return out;
  };
  return file;
}

// One request for several ranges: the parts the server sent ([{start, bytes}]), or null
// when this server or browser does not do multi-range requests (then the caller asks for
// each range alone). An abort is rethrown, never taken for a lack of support.
async function multiRangeParts(fetchFn, href, ranges, signal) {
  const spec = ranges.map((r) => `${r.offset}-${r.offset + r.length - 1}`).join(',');
  let res;
  try {
    res = await request(fetchFn, href, { headers: { Range: `bytes=${spec}` } }, signal);
  } catch (err) {
    throwIfAborted(signal);
    return null;  // e.g. a refused CORS preflight: a multi-range Range is not a safelisted header
  }
  if (res.status !== 206) {
    await res.body?.cancel();
    return null;
  }
  const type = res.headers.get('content-type') || '';
  const body = await bodyOf(res, href, signal);
  const boundary = /multipart\/byteranges\s*;.*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(type);
  if (!boundary) {
    // One part (the server merged the ranges, or sent one of them): its Content-Range says which.
    const m = /bytes\s+(\d+)-(\d+)\//.exec(res.headers.get('content-range') || '');
    if (!m || body.byteLength !== Number(m[2]) - Number(m[1]) + 1) return [];
    return [{ start: Number(m[1]), bytes: body }];
  }
  return multipartParts(body, boundary[1] || boundary[2]);
}

// The parts of a multipart/byteranges body (RFC 9110 §14.6, RFC 2046 §5.1): each a
// delimiter line, header lines with its Content-Range, an empty line, then exactly the
// bytes that Content-Range names (binary: located by that length, never by searching for
// the boundary inside them). A part that does not parse ends the list; the ranges it
// would have held are then read alone.
export function multipartParts(body, boundary) {
  const delimiter = new TextEncoder().encode(`--${boundary}`);
  const parts = [];
  let pos = 0;
  for (;;) {
    const at = indexOf(body, delimiter, pos);
    if (at < 0) return parts;
    pos = at + delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return parts;  // "--": the close delimiter
    const headEnd = indexOf(body, CRLFCRLF, pos);
    if (headEnd < 0) return parts;
    const head = new TextDecoder('latin1').decode(body.subarray(pos, headEnd));
    const m = /^content-range:\s*bytes\s+(\d+)-(\d+)\//im.exec(head);
    if (!m) return parts;
    const start = Number(m[1]);
    const length = Number(m[2]) - start + 1;
    const from = headEnd + CRLFCRLF.length;
    if (!(length > 0) || from + length > body.byteLength) return parts;
    parts.push({ start, bytes: body.subarray(from, from + length) });
    pos = from + length;
  }
}

const CRLFCRLF = new Uint8Array([13, 10, 13, 10]);

function indexOf(haystack, needle, from) {
  const first = needle[0];
  const last = haystack.byteLength - needle.byteLength;
  for (let i = haystack.indexOf(first, from); i >= 0 && i <= last; i = haystack.indexOf(first, i + 1)) {
    let k = 1;
    while (k < needle.byteLength && haystack[i + k] === needle[k]) k++;
    if (k === needle.byteLength) return i;
  }
  return -1;
}

// options.headers and options.accessToken ride on every request (a hub's
// `Authorization: Bearer …`); the reader's own Range header wins over a given one.
export function fetchWithHeaders(fetchFn, { headers, accessToken } = {}) {
  if (headers === undefined && accessToken === undefined) return fetchFn;
  if (accessToken !== undefined && (typeof accessToken !== 'string' || accessToken === '')) {
    throw new AmnError('invalid_argument', 'open(): accessToken must be a non-empty string');
  }
  let extra;
  try {
    extra = new Headers(headers ?? {});
  } catch (err) {
    throw new AmnError('invalid_argument', `open(): headers: ${err.message}`, { cause: err });
  }
  if (accessToken !== undefined) extra.set('Authorization', `Bearer ${accessToken}`);
  return (url, init = {}) => {
    const merged = new Headers(extra);
    for (const [k, v] of new Headers(init.headers ?? {})) merged.set(k, v);
    return fetchFn(url, { ...init, headers: merged });
  };
}

export async function urlSource(url, { fetch: fetchFn, signal, config: probeConfig = true }) {
  const opts = { fetch: fetchFn, signal };
  const entry = await urlFile(url, opts);
  const sibling = (n) => new URL(encodeURIComponent(n), url);
  // Beside an index, the config files follow the shards (probed in parallel; a 404 just
  // means there is none; `config: false` skips the probes, e.g. where a 404 in the
  // console is unwelcome). A single-file URL costs no extra request: open() + info is
  // one range GET when the header fits its first 64 KiB.
  const viaIndex = entryIsIndex(entry.name);
  return {
    entry,
    extras: [],
    afterShards: async () => {
      if (!viaIndex || !probeConfig) return [];
      const found = await Promise.all(configFiles.map((n) => urlFile(sibling(n), { ...opts, optional: true })));
      return found.filter(Boolean);
    },
    find: (n) => urlFile(sibling(n), { ...opts, optional: true }),
    missing: (n) => `shard ${n} named by ${entry.name} is missing (${sibling(n).href}: HTTP 404)`,
  };
}
