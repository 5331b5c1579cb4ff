// model.convert(): streaming to every sink kind, atomic path output, progress, abort.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { FIXTURES, loadPackage, rejectsAborted, rejectsWith, sha256, tempDir, bytesOf } from '../support/helpers.js';
import { W_VALUES, bf16Bits, sampleBytes, sampleTensors } from '../support/sample.js';

const amn = await loadPackage();

function collectingStream() {
  const chunks = [];
  const state = { aborted: null, closed: false };
  const stream = new WritableStream({
    write(chunk) { chunks.push(Buffer.from(chunk)); },
    close() { state.closed = true; },
    abort(reason) { state.aborted = reason ?? true; },
  });
  return { stream, state, bytes: () => Buffer.concat(chunks) };
}

async function checkBf16Output(bytes) {
  const out = await amn.open(bytes);
  const dtypes = Object.fromEntries(out.info.tensors.map((t) => [t.name, t.dtype]));
  assert.deepEqual(dtypes, { w: 'BF16', b: 'BF16', h: 'BF16', d: 'BF16', i: 'I32', l: 'I64', u: 'U8' });
  assert.deepEqual(out.info.metadata, { format: 'pt' });
  assert.deepEqual([...(await out.tensor('w')).data], W_VALUES.map(bf16Bits));
  assert.deepEqual([...(await out.tensor('d')).data], [1.5, -0.25, 1024].map(bf16Bits));
  assert.deepEqual([...(await out.tensor('i')).data], [1, -2, 3, -4, 2147483647]);
  await out.close();
}

test('convert to bf16: no sink, path, WritableStream and Node Writable give the same bytes', async (t) => {
  const dir = await tempDir(t);
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());

  const inMemory = await model.convert({ dtype: 'bf16' });
  assert.ok(inMemory instanceof Uint8Array);
  await checkBf16Output(inMemory);

  const path = join(dir, 'out.safetensors');
  const result = await model.convert({ dtype: 'bf16', sink: path });
  assert.equal(result.bytes, inMemory.length);
  assert.equal(result.path, path);
  assert.equal(sha256(await readFile(path)), sha256(inMemory));

  const ws = collectingStream();
  assert.deepEqual(await model.convert({ to: 'safetensors', dtype: 'bf16', sink: ws.stream }), { bytes: inMemory.length, tensors: 7 });
  assert.ok(ws.state.closed);
  assert.equal(sha256(ws.bytes()), sha256(inMemory));

  const chunks = [];
  const nodeSink = new Writable({ write(chunk, _enc, cb) { chunks.push(chunk); cb(); } });
  await model.convert({ dtype: 'bf16', sink: nodeSink });
  assert.equal(sha256(Buffer.concat(chunks)), sha256(inMemory));

  assert.deepEqual((await readdir(dir)).sort(), ['out.safetensors'], 'no temporary file is left');
});

test('convert without dtype keeps every dtype and every byte of tensor data', async (t) => {
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  const out = await amn.open(await model.convert());
  for (const src of sampleTensors()) {
    const got = await out.tensor(src.name);
    assert.equal(got.dtype, src.dtype);
    assert.deepEqual(got.shape, src.shape);
    assert.equal(sha256(bytesOf(got.data)), sha256(src.data), src.name);
  }
  await out.close();
});

test('convert to f16 and f32', async (t) => {
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  for (const [dtype, name] of [['f16', 'F16'], ['f32', 'F32']]) {
    const out = await amn.open(await model.convert({ dtype }));
    assert.equal((await out.tensor('w')).dtype, name);
    assert.deepEqual([...(await out.tensor('b', { to: 'f32' })).data], [1, -1, 2, 0.5, 0, -0, 8, 100]);
    await out.close();
  }
});

test('a path sink refuses an existing file unless overwrite, and replaces it atomically', async (t) => {
  const dir = await tempDir(t);
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  const path = join(dir, 'out.safetensors');
  await writeFile(path, 'precious');
  await rejectsWith(assert, model.convert({ dtype: 'bf16', sink: path }), 'exists', 'out.safetensors');
  assert.equal(await readFile(path, 'utf8'), 'precious');
  await model.convert({ dtype: 'bf16', sink: path, overwrite: true });
  assert.equal(sha256(await readFile(path)), sha256(await model.convert({ dtype: 'bf16' })));
  assert.deepEqual(await readdir(dir), ['out.safetensors']);
});

test('a path sink in a missing folder is an io error', async (t) => {
  const dir = await tempDir(t);
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  await rejectsWith(assert, model.convert({ sink: join(dir, 'no', 'such', 'out.safetensors') }), 'io');
});

test('progress counts output bytes up to the file size', async (t) => {
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  const seen = [];
  const bytes = await model.convert({ dtype: 'bf16', onProgress: (p) => seen.push(p) });
  assert.ok(seen.length >= 2);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].done > seen[i - 1].done);
  assert.deepEqual(seen.at(-1), { done: bytes.length, total: bytes.length });
  assert.ok(seen.every((p) => p.total === bytes.length));
});

test('abort: cancelled, the temp file removed, the target never created', async (t) => {
  const dir = await tempDir(t);
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  const path = join(dir, 'out.safetensors');
  const controller = new AbortController();
  await rejectsAborted(assert, model.convert({
    dtype: 'bf16', sink: path, signal: controller.signal, onProgress: () => controller.abort(),
  }));
  assert.deepEqual(await readdir(dir), []);

  const ws = collectingStream();
  const c2 = new AbortController();
  await rejectsAborted(assert, model.convert({ sink: ws.stream, signal: c2.signal, onProgress: () => c2.abort() }));
  assert.ok(ws.state.aborted, 'the WritableStream is aborted');

  const c3 = new AbortController();
  c3.abort();
  await rejectsAborted(assert, model.convert({ signal: c3.signal }));
  assert.equal((await model.convert()).length > 0, true, 'the model still works');
});

test('a failing sink aborts the conversion with its error', async (t) => {
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  const stream = new WritableStream({ write() { throw new Error('disk on fire'); } });
  await assert.rejects(model.convert({ sink: stream }), /disk on fire/);
  const nodeSink = new Writable({ write(_c, _e, cb) { cb(new Error('pipe burst')); } });
  await rejectsWith(assert, model.convert({ sink: nodeSink }), 'io', 'pipe burst');
});

test('bad options', async (t) => {
  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  await rejectsWith(assert, model.convert({ to: 'gguf' }), 'unsupported');
  await rejectsWith(assert, model.convert({ dtype: 'q4' }), 'invalid_argument');
  await rejectsWith(assert, model.convert({ sink: 42 }), 'invalid_argument');
});

// sync: false skips the fsyncs and nothing else. Counted on FileHandle.prototype.sync, which
// both the path sink and the folder sink call (for files and for folders).
test('sync: false writes the same bytes through a temporary name, without one fsync', async (t) => {
  const dir = await tempDir(t);
  const { open: openFile } = await import('node:fs/promises');
  const probe = await openFile(join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe);
  await probe.close();
  const original = proto.sync;
  let syncs = 0;
  proto.sync = function sync(...args) { syncs++; return original.apply(this, args); };
  t.after(() => { proto.sync = original; });

  const model = await amn.open(sampleBytes());
  t.after(() => model.close());
  const durable = join(dir, 'durable.safetensors');
  const scratch = join(dir, 'scratch.safetensors');
  await model.convert({ dtype: 'bf16', sink: durable });
  const durableSyncs = syncs;
  assert.ok(durableSyncs >= 2, `the default path sink fsyncs the file and its folder (saw ${durableSyncs})`);
  syncs = 0;
  const result = await model.convert({ dtype: 'bf16', sink: scratch, sync: false });
  assert.equal(syncs, 0, 'sync: false made no fsync');
  assert.equal(result.path, scratch);
  assert.equal(sha256(await readFile(scratch)), sha256(await readFile(durable)));
  assert.deepEqual((await readdir(dir)).sort(), ['durable.safetensors', 'probe', 'scratch.safetensors']);

  // A folder sink (sharded output): the same files, no fsync of any file or folder.
  const sharded = await amn.open(join(FIXTURES, 'models', 'tiny-sharded'));
  t.after(() => sharded.close());
  syncs = 0;
  await sharded.convert({ dtype: 'bf16', sink: join(dir, 'shards-durable') });
  assert.ok(syncs >= 3, `the default folder sink fsyncs its files and folders (saw ${syncs})`);
  syncs = 0;
  await sharded.convert({ dtype: 'bf16', sink: join(dir, 'shards-scratch'), sync: false });
  assert.equal(syncs, 0, 'sync: false made no fsync in a folder sink');
  const names = (await readdir(join(dir, 'shards-durable'))).sort();
  assert.deepEqual((await readdir(join(dir, 'shards-scratch'))).sort(), names);
  for (const name of names) {
    assert.equal(sha256(await readFile(join(dir, 'shards-scratch', name))), sha256(await readFile(join(dir, 'shards-durable', name))), name);
  }
  assert.ok(!(await readdir(dir)).some((n) => n.startsWith('.amn-tmp-')), 'no temporary left behind');
});
