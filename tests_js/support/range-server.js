// A small static file server with HTTP Range support, for testing readers that fetch
// byte ranges (vite preview mishandles suffix ranges, TOOLCHAIN.md quirk 12).
//   const srv = await startRangeServer({ root });   // 127.0.0.1, random port
//   srv.url                     'http://127.0.0.1:PORT/'
//   srv.stats.requests          every request; srv.stats.files['/a.bin'] = { requests, bytes }
//   srv.stats.log               { method, path, range, status, bytes, authorization? } per request
//   srv.ignoreRange = true      answer 200 + the whole file, as servers without Range do
//   srv.multiRange = false      answer a request of several ranges with 200 + the whole file
//                               (as S3 does); by default it gets multipart/byteranges (nginx)
//   srv.redirects.set('/a', [302, 'b/c'])   answer a path with that status and Location,
//                               sent as given (a relative one is the client's to resolve)
//   srv.reset(); await srv.close();
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { open as openFile, stat } from 'node:fs/promises';
import { join, normalize, sep } from 'node:path';

// bytes=a-b | a- | -n  →  { start, end } (inclusive), null if unsatisfiable,
// undefined if the header is absent or not a single byte range (serve the whole file).
export function parseRange(header, size) {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  let start;
  let end;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) return null;
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return undefined;  // malformed: ignore, per RFC 9110
  }
  if (start >= size) return null;
  return { start, end };
}

// bytes=a-b,c-d,... (two or more) → [{ start, end }] of the satisfiable ones, or undefined
// when the header is not a list of ranges. Each part is one of parseRange's forms.
export function parseRanges(header, size) {
  if (!header || !header.includes(',')) return undefined;
  const m = /^bytes=(.*)$/.exec(header.trim());
  if (!m) return undefined;
  const out = [];
  for (const part of m[1].split(',')) {
    const r = parseRange(`bytes=${part.trim()}`, size);
    if (r === undefined) return undefined;
    if (r !== null) out.push(r);
  }
  return out;
}

const BOUNDARY = 'amn-test-boundary';

export async function startRangeServer({ root, host = '127.0.0.1', port = 0 } = {}) {
  const stats = { requests: 0, bytes: 0, files: {}, log: [] };
  const state = { ignoreRange: false, multiRange: true };
  const redirects = new Map();
  // Counted as they happen (not on 'close'), so a client that has its answer sees
  // up-to-date numbers.
  const fileStats = (path) => (stats.files[path] ||= { requests: 0, bytes: 0 });
  const countRequest = (path, entry) => {
    stats.requests += 1;
    fileStats(path).requests += 1;
    stats.log.push(entry);
  };
  const countBytes = (path, entry, n) => {
    stats.bytes += n;
    fileStats(path).bytes += n;
    entry.bytes += n;
  };

  const server = createServer(async (req, res) => {
    const urlPath = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = normalize(join(root, urlPath));
    const entry = { method: req.method, path: urlPath, range: req.headers.range || null, status: 0, bytes: 0 };
    // Only when sent, so logs without credentials read as before.
    if (req.headers.authorization) entry.authorization = req.headers.authorization;
    countRequest(urlPath, entry);
    const finish = (status, headers, body = '') => {
      entry.status = status;
      res.writeHead(status, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return finish(405, { Allow: 'GET, HEAD' });
    const hop = redirects.get(urlPath);
    if (hop) return finish(hop[0], { Location: hop[1] });
    if (file !== normalize(root) && !file.startsWith(normalize(root + sep))) return finish(403, {});
    let st;
    try {
      st = await stat(file);
    } catch {
      return finish(404, { 'Content-Type': 'text/plain' }, 'not found');
    }
    if (!st.isFile()) return finish(404, { 'Content-Type': 'text/plain' }, 'not found');
    const size = st.size;
    const many = state.ignoreRange || !state.multiRange ? undefined : parseRanges(req.headers.range, size);
    if (many !== undefined) return serveParts(file, size, many, req, res, entry, urlPath);
    const range = state.ignoreRange ? undefined : parseRange(req.headers.range, size);
    const common = { 'Content-Type': 'application/octet-stream', 'Cache-Control': 'no-store' };
    if (!state.ignoreRange) common['Accept-Ranges'] = 'bytes';
    if (range === null) {
      return finish(416, { ...common, 'Content-Range': `bytes */${size}` });
    }
    const { start, end } = range || { start: 0, end: size - 1 };
    const length = size === 0 ? 0 : end - start + 1;
    const headers = { ...common, 'Content-Length': String(length) };
    if (range) headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
    entry.status = range ? 206 : 200;
    res.writeHead(entry.status, headers);
    if (req.method === 'HEAD' || length === 0) return res.end();
    const stream = createReadStream(file, { start, end });
    stream.on('data', (chunk) => countBytes(urlPath, entry, chunk.length));
    stream.pipe(res);
    res.on('close', () => stream.destroy());  // the client may stop reading early
  });

  // multipart/byteranges (RFC 9110 §14.6): each part its own Content-Range, in the order asked.
  async function serveParts(file, size, ranges, req, res, entry, urlPath) {
    if (ranges.length === 0) {
      entry.status = 416;
      res.writeHead(416, { 'Content-Range': `bytes */${size}` });
      return res.end();
    }
    const fh = await openFile(file, 'r');
    const chunks = [];
    try {
      for (const { start, end } of ranges) {
        chunks.push(Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Type: application/octet-stream\r\n`
          + `Content-Range: bytes ${start}-${end}/${size}\r\n\r\n`));
        const body = Buffer.alloc(end - start + 1);
        await fh.read(body, 0, body.length, start);
        chunks.push(body);
      }
    } finally {
      await fh.close();
    }
    chunks.push(Buffer.from(`\r\n--${BOUNDARY}--\r\n`));
    const all = Buffer.concat(chunks);
    entry.status = 206;
    res.writeHead(206, {
      'Content-Type': `multipart/byteranges; boundary=${BOUNDARY}`, 'Content-Length': String(all.length),
      'Accept-Ranges': 'bytes', 'Cache-Control': 'no-store',
    });
    if (req.method !== 'HEAD') countBytes(urlPath, entry, all.length);
    res.end(req.method === 'HEAD' ? undefined : all);
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const actualPort = server.address().port;
  return {
    url: `http://${host}:${actualPort}/`,
    port: actualPort,
    stats,
    redirects,
    get ignoreRange() { return state.ignoreRange; },
    set ignoreRange(v) { state.ignoreRange = Boolean(v); },
    get multiRange() { return state.multiRange; },
    set multiRange(v) { state.multiRange = Boolean(v); },
    setIgnoreRange(v) { state.ignoreRange = Boolean(v); },
    reset() {
      stats.requests = 0;
      stats.bytes = 0;
      stats.files = {};
      stats.log = [];
    },
    close() {
      return new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      });
    },
  };
}
