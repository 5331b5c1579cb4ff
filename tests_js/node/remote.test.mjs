// URL sources over HTTP Range: inspecting a huge remote file costs one range read (no
// HEAD: the first read's Content-Range gives the size); tensors and conversions fetch only what they need; errors are clear.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPackage, rejectsAborted, rejectsWith, sha256, tempDir } from '../support/helpers.js';
import { sampleBytes } from '../support/sample.js';
import { makeSafetensors, writeSparseSafetensors } from '../support/safetensors.js';
import { startRangeServer } from '../support/range-server.js';

const amn = await loadPackage();
const READ_AHEAD = 64 * 1024;

async function serve(t, dir) {
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  return server;
}

// 1 GiB + of F32 that costs no disk: the data section is a hole.
const BIG = [
  { name: 'a', dtype: 'F32', shape: [16] },
  { name: 'big', dtype: 'F32', shape: [16384, 16400] },
  { name: 'z', dtype: 'F32', shape: [4] },
];

test('open() + info of a sparse 1 GiB file: one request (no HEAD), header + 64 KiB', async (t) => {
  const dir = await tempDir(t);
  const { headerBytes, size } = await writeSparseSafetensors(join(dir, 'huge.safetensors'), BIG, { format: 'pt' });
  assert.ok(size > 2 ** 30);
  const server = await serve(t, dir);
  const model = await amn.open(`${server.url}huge.safetensors`);
  assert.equal(model.info.files[0].size, size);
  assert.equal(model.info.files[0].header_bytes, headerBytes);
  assert.deepEqual(model.info.tensors.map((x) => x.name), ['a', 'big', 'z']);
  assert.equal(model.info.parameters, 16 + 16384 * 16400 + 4);
  // The first 64 KiB GET gives the size (Content-Range) and holds the header.
  assert.equal(server.stats.requests, 1, `requests: ${JSON.stringify(server.stats.log)}`);
  assert.deepEqual(server.stats.log.map((r) => [r.method, r.range]), [['GET', `bytes=0-${READ_AHEAD - 1}`]]);
  assert.ok(server.stats.bytes <= headerBytes + READ_AHEAD, `bytes: ${server.stats.bytes}`);

  // One tensor at the far end: one more request, its bytes only.
  server.reset();
  const z = await model.tensor('z');
  assert.deepEqual([...z.data], [0, 0, 0, 0]);
  assert.equal(server.stats.requests, 1);
  assert.equal(server.stats.bytes, 16);
  await model.close();
});

test('a header larger than the read-ahead (5000 tensors) is fetched in one more request', async (t) => {
  const dir = await tempDir(t);
  const tensors = Array.from({ length: 5000 }, (_, i) => ({
    name: `model.layers.${i}.self_attn.q_proj.weight`, dtype: 'BF16', shape: [64, 64],
  }));
  const { headerBytes } = await writeSparseSafetensors(join(dir, 'wide.safetensors'), tensors);
  assert.ok(headerBytes > READ_AHEAD);
  const server = await serve(t, dir);
  const model = await amn.open(`${server.url}wide.safetensors`);
  assert.equal(model.info.tensors.length, 5000);
  assert.equal(model.info.tensors[4999].name, 'model.layers.4999.self_attn.q_proj.weight');
  assert.ok(server.stats.requests <= 2, `requests: ${server.stats.requests}`);
  assert.ok(server.stats.bytes <= headerBytes + READ_AHEAD, `bytes: ${server.stats.bytes}`);
  await model.close();
});

test('tensors and conversions over HTTP match local ones', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'sample.safetensors'), sampleBytes());
  const server = await serve(t, dir);
  const local = await amn.open(sampleBytes(), { name: 'sample.safetensors' });
  const remote = await amn.open(`${server.url}sample.safetensors`);
  assert.deepEqual(remote.info, local.info);
  assert.deepEqual([...(await remote.tensor('w', { to: 'bf16' })).data], [...(await local.tensor('w', { to: 'bf16' })).data]);
  assert.equal(sha256(await remote.convert({ dtype: 'bf16' })), sha256(await local.convert({ dtype: 'bf16' })));
  await local.close();
  await remote.close();
});

test('a server that ignores Range is an io error, without downloading the file', async (t) => {
  const dir = await tempDir(t);
  await writeSparseSafetensors(join(dir, 'huge.safetensors'), BIG);
  const server = await serve(t, dir);
  server.ignoreRange = true;
  await rejectsWith(assert, amn.open(`${server.url}huge.safetensors`), 'io', 'Range');
  assert.ok(server.stats.bytes < 256 * 2 ** 20, `sent ${server.stats.bytes} bytes`);
});

test('HTTP failures are io errors', async (t) => {
  const dir = await tempDir(t);
  const server = await serve(t, dir);
  await rejectsWith(assert, amn.open(`${server.url}missing.safetensors`), 'io', '404');
  const closed = await startRangeServer({ root: dir });
  const url = `${closed.url}x.safetensors`;
  await closed.close();
  await rejectsWith(assert, amn.open(url), 'io', 'fetch');
});

test('options.fetch is used, and aborting a fetch cancels', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'sample.safetensors'), sampleBytes());
  const server = await serve(t, dir);
  let calls = 0;
  const counting = (url, init) => { calls += 1; return fetch(url, init); };
  const model = await amn.open(`${server.url}sample.safetensors`, { fetch: counting });
  assert.equal(calls, 1, 'a small file: one ranged GET');
  await model.close();

  const controller = new AbortController();
  const aborting = (url, init) => { controller.abort(); return fetch(url, init); };
  await rejectsAborted(assert, amn.open(`${server.url}sample.safetensors`, { fetch: aborting, signal: controller.signal }));
});

test('headers and accessToken ride on every request; a bad accessToken is refused', async (t) => {
  const dir = await tempDir(t);
  const tensors = Array.from({ length: 5000 }, (_, i) => ({ name: `model.layers.${i}.mlp.up_proj.weight`, dtype: 'BF16', shape: [2, 2] }));
  await writeSparseSafetensors(join(dir, 'wide.safetensors'), tensors);
  const server = await serve(t, dir);
  const url = `${server.url}wide.safetensors`;
  let model = await amn.open(url, { accessToken: 'hf_secret' });
  await model.tensor('model.layers.4999.mlp.up_proj.weight');
  await model.close();
  assert.ok(server.stats.log.length >= 3, 'the first read, the rest of the header, a tensor');
  assert.deepEqual(server.stats.log.map((r) => r.authorization), server.stats.log.map(() => 'Bearer hf_secret'));

  server.reset();
  model = await amn.open(url, { headers: { Authorization: 'Basic dTpw' } });
  await model.tensor('model.layers.0.mlp.up_proj.weight');
  await model.close();
  assert.deepEqual(server.stats.log.map((r) => [r.authorization, Boolean(r.range)]), server.stats.log.map(() => ['Basic dTpw', true]),
    'given headers, and the reader\'s own Range');
  await rejectsWith(assert, amn.open(url, { accessToken: 42 }), 'invalid_argument', 'accessToken');
});

test('await using: a model is closed at the end of its block (Symbol.asyncDispose)', async () => {
  const model = await amn.open(sampleBytes());
  assert.equal(typeof model[Symbol.asyncDispose], 'function');
  await model[Symbol.asyncDispose]();
  await rejectsWith(assert, model.tensor('w'), 'invalid_argument', 'closed');
});

// A GPTQ layer whose output takes two pieces (2048 rows of 4096 F16 inputs, 16 MiB of
// F32 staging per piece): every piece needs the whole layer (an output row is a column
// of qweight), yet over HTTP the layer is fetched once, not once per piece.
test('convert(): a quantized layer cut into pieces is fetched once', async (t) => {
  const [inF, outF, group] = [4096, 2048, 128];
  const random = (n) => { const b = new Uint8Array(n); for (let i = 0; i < n; i += 65536) crypto.getRandomValues(b.subarray(i, i + 65536)); return b; };
  const gIdx = new Int32Array(inF).map((_, i) => Math.floor(i / group));
  const scales = new Uint16Array((inF / group) * outF).fill(0x211f);  // F16 0.01
  const bytes = makeSafetensors([
    { name: 'l.qweight', dtype: 'I32', shape: [inF / 8, outF], data: random(inF / 8 * outF * 4) },
    { name: 'l.qzeros', dtype: 'I32', shape: [inF / group, outF / 8], data: random(inF / group * outF / 8 * 4) },
    { name: 'l.scales', dtype: 'F16', shape: [inF / group, outF], data: new Uint8Array(scales.buffer) },
    { name: 'l.g_idx', dtype: 'I32', shape: [inF], data: new Uint8Array(gIdx.buffer) },
  ]);
  const dir = await tempDir(t);
  await writeFile(join(dir, 'gptq.safetensors'), bytes);
  const server = await serve(t, dir);
  const remote = await amn.open(`${server.url}gptq.safetensors`);
  const local = await amn.open(join(dir, 'gptq.safetensors'));
  t.after(async () => { await remote.close(); await local.close(); });
  assert.equal(remote.info.logical[0].scheme, 'gptq');
  const before = server.stats.files['/gptq.safetensors'].bytes;
  const out = await remote.convert();
  assert.equal(sha256(out), sha256(await local.convert()));
  const fetched = server.stats.files['/gptq.safetensors'].bytes - before;
  assert.ok(fetched <= bytes.length, `convert fetched ${fetched} bytes of a ${bytes.length}-byte file`);
  // Less what the first 64 KiB read already holds (the reader never fetches it again).
  assert.ok(fetched >= bytes.length - READ_AHEAD, `convert fetched only ${fetched} bytes`);
});

// A range's body goes through the response stream straight into WASM memory (session.js
// readIntoCore): gathering it with arrayBuffer() made a fresh buffer, as large as the range,
// per range read. Only the first read of a file is gathered (it answers the core's first
// read and later ones that fall inside it).
test('tensor reads over HTTP stream their bodies: no arrayBuffer() per range, same bytes', async (t) => {
  const dir = await tempDir(t);
  const tensors = [
    { name: 'a', dtype: 'F32', shape: [8] },
    { name: 'big', dtype: 'F32', shape: [256, 1024] },
  ];
  const data = (n) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + 3) & 0x7f);  // finite F32s
  const bytes = makeSafetensors([{ ...tensors[0], data: data(32) }, { ...tensors[1], data: data(256 * 1024 * 4) }]);
  await writeFile(join(dir, 'm.safetensors'), bytes);
  const server = await serve(t, dir);
  const gathered = [];
  const spyFetch = async (url, init) => {
    const res = await fetch(url, init);
    const range = new Headers(init?.headers).get('range');
    const own = res.arrayBuffer.bind(res);
    res.arrayBuffer = () => { gathered.push(range); return own(); };
    return res;
  };
  const model = await amn.open(`${server.url}m.safetensors`, { fetch: spyFetch });
  const local = await amn.open(bytes);
  const big = await model.tensor('big');
  assert.equal(big.data.length, 256 * 1024);
  assert.equal(sha256(big.data), sha256((await local.tensor('big')).data));
  assert.deepEqual(gathered, [`bytes=0-${READ_AHEAD - 1}`], `gathered: ${JSON.stringify(gathered)}`);
  assert.ok(server.stats.requests >= 2);
  await model.close();
  await local.close();
});
