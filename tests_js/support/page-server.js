// Serves the built page and the fixtures from one origin, so the page can open fixture
// URLs without CORS. Pages need real Content-Types (the shared range server answers
// everything as application/octet-stream, which makes a browser download index.html);
// byte ranges use the shared server's parser (TOOLCHAIN.md quirk 12: not vite preview).
//   const srv = await startPageServer({ mounts: { '/': distDir, '/fixtures/': fixturesDir } });
//   srv.url, srv.log (every request: { method, path, range, status }), await srv.close()
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { parseRange } from './range-server.js';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

export async function startPageServer({ mounts, port = 0 }) {
  // Longest prefix first, so '/fixtures/' wins over '/'.
  const table = Object.entries(mounts).sort((a, b) => b[0].length - a[0].length);
  const log = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const entry = { method: req.method, path, range: req.headers.range ?? null, status: 0 };
    log.push(entry);
    const send = (status, headers = {}, body) => {
      entry.status = status;
      res.writeHead(status, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, { Allow: 'GET, HEAD' });
    const mount = table.find(([prefix]) => path.startsWith(prefix));
    if (!mount) return send(404);
    const [prefix, root] = mount;
    let file = normalize(join(root, path.slice(prefix.length)));
    if (file !== normalize(root) && !file.startsWith(normalize(root + sep))) return send(403);
    let st = await stat(file).catch(() => null);
    if (st?.isDirectory()) {
      file = join(file, 'index.html');
      st = await stat(file).catch(() => null);
    }
    if (!st?.isFile()) return send(404, { 'Content-Type': 'text/plain' }, 'not found');
    const headers = {
      'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      'Cache-Control': 'no-store',
    };
    const range = parseRange(req.headers.range, st.size);
    if (range === null) return send(416, { ...headers, 'Content-Range': `bytes */${st.size}` });
    const { start, end } = range ?? { start: 0, end: st.size - 1 };
    headers['Content-Length'] = String(st.size === 0 ? 0 : end - start + 1);
    if (range) headers['Content-Range'] = `bytes ${start}-${end}/${st.size}`;
    entry.status = range ? 206 : 200;
    res.writeHead(entry.status, headers);
    if (req.method === 'HEAD' || st.size === 0) return res.end();
    const stream = createReadStream(file, { start, end });
    stream.pipe(res);
    res.on('close', () => stream.destroy());
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const actual = server.address().port;
  return {
    url: `http://127.0.0.1:${actual}/`,
    log,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
