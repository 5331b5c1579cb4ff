// A small static file server for the HTTP cases of bench/js/open.mjs, run as a child
// process (a server apart from the client, as a hub is). It serves the files named on its
// command line by base name under any path (so /ORG/REPO/resolve/main/NAME, the URL
// @huggingface/hub builds, works too), answers single Range requests with 206 and a
// Content-Range carrying the size, sends an ETag (the hub client requires one), and counts
// the requests it sees. GET /__count answers the count since the last /__count.
//   node range_server.mjs FILE...   prints the port on stdout once listening
import { createServer } from 'node:http';
import { openSync, readSync, fstatSync } from 'node:fs';
import { basename } from 'node:path';

const files = new Map();
for (const path of process.argv.slice(2)) {
  const fd = openSync(path, 'r');
  files.set(basename(path), { fd, size: fstatSync(fd).size });
}

let count = 0;
const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (path === '/__count') {
    res.end(String(count));
    count = 0;
    return;
  }
  count++;
  const file = files.get(basename(path));
  if (!file) {
    res.writeHead(404, { 'X-Error-Code': 'EntryNotFound' });
    res.end();
    return;
  }
  const headers = { 'Accept-Ranges': 'bytes', 'Content-Type': 'application/octet-stream', ETag: '"bench"' };
  let start = 0;
  let end = file.size - 1;
  let status = 200;
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
  if (m) {
    start = Number(m[1]);
    end = m[2] === '' ? file.size - 1 : Math.min(Number(m[2]), file.size - 1);
    if (start >= file.size) {
      res.writeHead(416, { ...headers, 'Content-Range': `bytes */${file.size}` });
      res.end();
      return;
    }
    status = 206;
    headers['Content-Range'] = `bytes ${start}-${end}/${file.size}`;
  }
  const length = end - start + 1;
  headers['Content-Length'] = String(length);
  res.writeHead(status, headers);
  if (req.method === 'HEAD') { res.end(); return; }
  // Every request here is a header read (bounded by the clients); a whole-file GET of a
  // sparse multi-GB file would be a bug in a client, so it is refused rather than streamed.
  if (length > 64 << 20) { res.destroy(); return; }
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(file.fd, buf, got, length - got, start + got);
    if (n === 0) break;
    got += n;
  }
  res.end(buf);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
