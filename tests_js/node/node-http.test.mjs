// In Node, URL reads without a `fetch` option go through node:http(s) (npm/lib/node-http.js)
// and must behave as the fetch path does where it matters: redirects and what they drop,
// aborts, errors (the same codes and messages), no compression, and an idle process exits.
// Most tests run a case both ways (no option, and `fetch: globalThis.fetch`) and compare.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { NPM, loadPackage, rejectsAborted, tempDir } from '../support/helpers.js';
import { sampleBytes } from '../support/sample.js';
import { makeSafetensors } from '../support/safetensors.js';
import { startRangeServer } from '../support/range-server.js';

const amn = await loadPackage();
const { nodeFetch } = await import(join(NPM, 'lib', 'node-http.js'));
const BOTH = [['node:http', {}], ['fetch', { fetch: (url, init) => fetch(url, init) }]];

async function sampleServer(t) {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'sample.safetensors'), sampleBytes());
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  return server;
}

// A server of our own for what the range server does not do; `handle(req, res)`.
async function rawServer(t, handle) {
  const server = createServer(handle);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }));
  return { server, url: `http://127.0.0.1:${server.address().port}/` };
}

// The error open() rejects with, for comparing the two paths.
async function failure(promise) {
  try {
    await promise;
  } catch (err) {
    return { name: err.name, code: err.code, message: err.message };
  }
  assert.fail('expected a rejection');
}

test('without options.fetch, URL reads do not use globalThis.fetch; with it, it is used', async (t) => {
  const server = await sampleServer(t);
  const url = `${server.url}sample.safetensors`;
  const global = globalThis.fetch;
  let globalCalls = 0;
  globalThis.fetch = (...args) => { globalCalls += 1; return global(...args); };
  t.after(() => { globalThis.fetch = global; });
  const model = await amn.open(url);
  assert.equal(model.info.tensors.length, 7);
  assert.equal((await model.tensor('w')).data.length > 0, true);
  await model.close();
  assert.equal(globalCalls, 0);
  assert.equal(server.stats.requests, 1);
  let given = 0;
  const custom = await amn.open(url, { fetch: (u, init) => { given += 1; return global(u, init); } });
  await custom.close();
  assert.equal(given, 1);
});

test('redirects: every redirect status, a relative Location, the same requests as fetch', async (t) => {
  const server = await sampleServer(t);
  for (const status of [301, 302, 303, 307, 308]) {
    server.redirects.set(`/moved/${status}/model.safetensors`, [status, '../../sample.safetensors']);
  }
  const logs = {};
  for (const [how, options] of BOTH) {
    for (const status of [301, 302, 303, 307, 308]) {
      server.reset();
      const model = await amn.open(`${server.url}moved/${status}/model.safetensors`, options);
      assert.equal(model.info.tensors.length, 7, `${how} ${status}`);
      await model.close();
      (logs[how] ||= []).push(server.stats.log.map((r) => [r.method, r.path, r.range, r.status]));
    }
  }
  assert.deepEqual(logs['node:http'][0], [
    ['GET', '/moved/301/model.safetensors', 'bytes=0-65535', 301],
    ['GET', '/sample.safetensors', 'bytes=0-65535', 206],
  ]);
  assert.deepEqual(logs['node:http'], logs.fetch);
});

test('redirects: 20 are followed, the 21st is an io error worded as fetch words it', async (t) => {
  const server = await sampleServer(t);
  for (let i = 1; i <= 21; i++) server.redirects.set(`/hop${i}`, [302, i === 1 ? '/sample.safetensors' : `/hop${i - 1}`]);
  for (const [how, options] of BOTH) {
    const model = await amn.open(`${server.url}hop20`, options);
    assert.equal(model.info.tensors.length, 7, how);
    await model.close();
  }
  const [mine, theirs] = await Promise.all(BOTH.map(([, options]) => failure(amn.open(`${server.url}hop21`, options))));
  assert.equal(mine.code, 'io');
  assert.match(mine.message, /redirect count exceeded/);
  assert.deepEqual(mine, theirs);
  server.redirects.set('/elsewhere', [302, 'ftp://127.0.0.1/x']);
  const [a, b] = await Promise.all(BOTH.map(([, options]) => failure(amn.open(`${server.url}elsewhere`, options))));
  assert.equal(a.code, 'io');
  assert.deepEqual(a, b);
});

test('redirects: credentials are dropped on a cross-origin hop (the Hub to its CDN), kept on the same origin', async (t) => {
  const cdn = await sampleServer(t);
  const hub = await sampleServer(t);
  hub.redirects.set('/org/repo/resolve/main/model.safetensors', [302, `${cdn.url}sample.safetensors`]);
  hub.redirects.set('/same/model.safetensors', [307, '/sample.safetensors']);
  const seen = {};
  for (const [how, options] of BOTH) {
    for (const auth of [{ accessToken: 'hf_secret' }, { headers: { Authorization: 'Basic dTpw', 'X-Trace': 'kept' } }]) {
      hub.reset();
      cdn.reset();
      const model = await amn.open(`${hub.url}org/repo/resolve/main/model.safetensors`, { ...options, ...auth });
      await model.close();
      const same = await amn.open(`${hub.url}same/model.safetensors`, { ...options, ...auth });
      await same.close();
      (seen[how] ||= []).push([hub.stats.log.map((r) => r.authorization ?? null), cdn.stats.log.map((r) => r.authorization ?? null)]);
    }
  }
  assert.deepEqual(seen['node:http'], [
    [['Bearer hf_secret', 'Bearer hf_secret', 'Bearer hf_secret'], [null]],
    [['Basic dTpw', 'Basic dTpw', 'Basic dTpw'], [null]],
  ]);
  assert.deepEqual(seen['node:http'], seen.fetch);
  // Other headers ride on across origins, as with fetch; compression is never asked for.
  const headers = [];
  const { url } = await rawServer(t, (req, res) => {
    headers.push(req.headers);
    res.writeHead(302, { Location: `${cdn.url}sample.safetensors` });
    res.end();
  });
  cdn.reset();
  const model = await amn.open(`${url}model.safetensors`, { headers: { 'X-Trace': 'kept', 'Accept-Encoding': 'gzip' } });
  await model.close();
  assert.equal(headers[0]['x-trace'], 'kept');
  assert.equal(headers[0]['accept-encoding'], 'identity');
  assert.equal(cdn.stats.log.length, 1);
});

test('the transport sends Accept-Encoding: identity and takes headers as a Headers, a record or pairs', async (t) => {
  const seen = [];
  const { url } = await rawServer(t, (req, res) => { seen.push(req.headers); res.end('ok'); });
  for (const headers of [new Headers({ Range: 'bytes=0-1' }), { Range: 'bytes=0-1' }, [['Range', 'bytes=0-1']]]) {
    const res = await nodeFetch(url, { headers });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');
  }
  assert.deepEqual(seen.map((h) => [h.range, h['accept-encoding']]), Array(3).fill(['bytes=0-1', 'identity']));
});

test('aborting while the server has not answered: AbortError, and the request is destroyed', { timeout: 60_000 }, async (t) => {
  const controller = new AbortController();
  let closed;
  const { url } = await rawServer(t, (req) => {
    closed = once(req.socket, 'close');
    controller.abort();  // the request has arrived; never answered
  });
  await rejectsAborted(assert, amn.open(`${url}model.safetensors`, { signal: controller.signal }));
  await closed;  // the client destroyed its socket (else this never settles)
});

// Serves `bytes` with single Range answers; `tail(req, res, from, to)` may take a
// request that does not start at 0 instead.
function bytesHandler(bytes, tail = null) {
  return (req, res) => {
    const [, a, b] = /bytes=(\d+)-(\d+)/.exec(req.headers.range ?? 'bytes=0-0');
    const from = Number(a);
    const to = Math.min(Number(b), bytes.length - 1);
    if (from > 0 && tail) return tail(req, res, from, to);
    res.writeHead(206, { 'Content-Range': `bytes ${from}-${to}/${bytes.length}`, 'Content-Length': String(to - from + 1) });
    res.end(bytes.subarray(from, to + 1));
  };
}

test('aborting while a body streams: AbortError, and the response is destroyed', { timeout: 60_000 }, async (t) => {
  const bytes = makeSafetensors([
    { name: 'a', dtype: 'F32', shape: [4], data: new Uint8Array(16) },
    { name: 'big', dtype: 'F32', shape: [512, 512], data: new Uint8Array(512 * 512 * 4) },
  ]);
  const controller = new AbortController();
  let closed;
  // The tensor's read: a little of its body, then nothing until the client gives up.
  const { url } = await rawServer(t, bytesHandler(bytes, (req, res, from, to) => {
    res.writeHead(206, { 'Content-Range': `bytes ${from}-${to}/${bytes.length}`, 'Content-Length': String(to - from + 1) });
    closed = once(res, 'close');
    res.write(Buffer.alloc(1000), () => controller.abort());
  }));
  const model = await amn.open(`${url}m.safetensors`);
  t.after(() => model.close());
  await rejectsAborted(assert, model.tensor('big', { signal: controller.signal }));
  await closed;  // the client destroyed the response's socket (else this never settles)
});

test('errors: refused, unknown host, TLS and HTTP statuses give the fetch path\'s codes and messages', async (t) => {
  const server = await sampleServer(t);
  const gone = await startRangeServer({ root: '/' });
  await gone.close();
  const { url: plain } = await rawServer(t, (req, res) => { res.end('not TLS'); });
  const { url: failing } = await rawServer(t, (req, res) => { res.writeHead(503, 'Busy Now'); res.end(); });
  const cases = [
    `${gone.url}x.safetensors`,
    'http://nonexistent.invalid/x.safetensors',
    `${plain.replace('http:', 'https:')}x.safetensors`,
    `${server.url}missing.safetensors`,
    `${failing}x.safetensors`,
  ];
  for (const url of cases) {
    const [mine, theirs] = [await failure(amn.open(url)), await failure(amn.open(url, BOTH[1][1]))];
    assert.equal(mine.code, 'io', `${url}: ${mine.message}`);
    assert.deepEqual(mine, theirs, url);
  }
  assert.match((await failure(amn.open(`${failing}x.safetensors`))).message, /HTTP 503 Busy Now/);
});

test('a kept-alive socket the server closed is retried on a new one', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'sample.safetensors'), sampleBytes());
  const files = await startRangeServer({ root: dir });
  t.after(() => files.close());
  const perSocket = new Map();
  let dropped = 0;
  const { url } = await rawServer(t, async (req, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    if (n === 2) { dropped += 1; req.socket.destroy(); return; }  // as if it timed out as the request came
    const upstream = await fetch(`${files.url}sample.safetensors`, { headers: { Range: req.headers.range } });
    res.writeHead(upstream.status, { 'Content-Range': upstream.headers.get('content-range'), 'Content-Length': upstream.headers.get('content-length') });
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  for (let i = 0; i < 2; i++) {
    const model = await amn.open(`${url}sample.safetensors`);
    assert.equal(model.info.tensors.length, 7);
    await model.close();
  }
  assert.equal(dropped, 1);
});

test('a script that opens a URL and closes it exits without waiting for its idle connection', { timeout: 60_000 }, async (t) => {
  let requests = 0;
  const handle = bytesHandler(sampleBytes());
  const { server, url } = await rawServer(t, (req, res) => { requests += 1; handle(req, res); });
  // Idle connections stay open for good (Node's default would close them after 5 s): the
  // child's exit then shows that its idle socket did not hold its event loop.
  server.keepAliveTimeout = 0;
  const script = `import { open } from ${JSON.stringify(join(NPM, 'node.js'))};
    const m = await open(${JSON.stringify(`${url}sample.safetensors`)}); await m.tensor('w'); await m.close();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
  const [code] = await once(child, 'exit');
  assert.equal(code, 0);
  assert.equal(requests, 1);
});

// A page's bundle must not hold node:http: the browser entry's static and dynamic imports
// (the ones a bundler follows) never reach the transport, nor any node: module.
test('the browser entry does not reach the node:http transport', async () => {
  const seen = new Set();
  const specifiers = [];
  const walk = async (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    // Comments out (model.js's comments name import('./x.js') as an example).
    const text = (await readFile(file, 'utf8')).replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '');
    for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)'([^']+)'/g)) {
      specifiers.push(m[1]);
      if (m[1].startsWith('.') && !m[1].includes('/dist/')) await walk(join(dirname(file), m[1]));
    }
  };
  await walk(join(NPM, 'index.js'));
  assert.ok(seen.has(join(NPM, 'lib', 'sources.js')), 'the walk follows imports');
  assert.ok(!seen.has(join(NPM, 'lib', 'node-http.js')));
  assert.deepEqual(specifiers.filter((s) => s.startsWith('node:')), []);
  // And the Node entry does load it (so the walk would see it there).
  seen.clear();
  await walk(join(NPM, 'node.js'));
  assert.ok(seen.has(join(NPM, 'lib', 'node-http.js')));
});
