// model.convert() of a sharded model: a Node folder path written atomically, openShard
// for any sink per file, the single-file forms unchanged, and the misuses refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, loadPackage, rejectsAborted, rejectsWith, tempDir } from '../support/helpers.js';

const amn = await loadPackage();
const SHARDED = join(FIXTURES, 'models', 'tiny-sharded');
const INDEX = 'model.safetensors.index.json';
const SHARDS = ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors'];

async function withModel(source, fn) {
  const model = await amn.open(source);
  try { return await fn(model); } finally { await model.close(); }
}

// Every tensor of a model, as bytes, by name.
async function tensorsOf(source) {
  return withModel(source, async (m) => {
    const out = {};
    for (const t of m.info.tensors) out[t.name] = Buffer.from((await m.tensor(t.name)).data.buffer);
    return out;
  });
}

test('a folder path gets the input\'s shards and the index; they hold the single file\'s tensors', async (t) => {
  const dir = await tempDir(t);
  const out = join(dir, 'tiny-bf16');
  const progress = [];
  const result = await withModel(SHARDED, (m) => m.convert({ sink: out, dtype: 'bf16', onProgress: (p) => progress.push(p) }));
  assert.equal(result.path, out);
  assert.equal(result.shards, 3);
  assert.deepEqual(result.files.map((f) => f.name), [...SHARDS, INDEX]);
  assert.deepEqual((await readdir(out)).sort(), [...SHARDS, INDEX].sort());
  assert.deepEqual(await readdir(dir), ['tiny-bf16'], 'no temporary folder left');
  for (const f of result.files) assert.equal((await readFile(join(out, f.name))).byteLength, f.bytes, f.name);
  assert.equal(result.bytes, result.files.slice(0, 3).reduce((n, f) => n + f.bytes, 0));
  assert.deepEqual(progress.at(-1), { done: result.bytes, total: result.bytes });
  // The input's boundaries: the same tensors in shard k as in the input's shard k.
  const input = JSON.parse(await readFile(join(SHARDED, INDEX), 'utf8')).weight_map;
  const index = JSON.parse(await readFile(join(out, INDEX), 'utf8'));
  assert.deepEqual(index.weight_map, input);
  // Same bytes as the single-file conversion, tensor by tensor.
  const single = await withModel(SHARDED, (m) => m.convert({ dtype: 'bf16' }));
  assert.ok(single instanceof Uint8Array, 'no sink: still one file');
  const want = await tensorsOf(single);
  const got = await tensorsOf(out);
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
  for (const name of Object.keys(want)) assert.ok(got[name].equals(want[name]), name);
  assert.equal(index.metadata.total_size, Object.values(want).reduce((n, b) => n + b.byteLength, 0));
});

test('openShard: one sink per file, collected when it returns null; maxShardSize re-shards', async () => {
  const opened = [];
  const result = await withModel(SHARDED, (m) => m.convert({
    dtype: 'f32', maxShardSize: '30KB', openShard: (name) => { opened.push(name); return null; },
  }));
  assert.deepEqual(opened, result.files.map((f) => f.name));
  assert.equal(opened.at(-1), INDEX);
  for (const f of result.files) {
    assert.ok(f.output instanceof Uint8Array, f.name);
    assert.equal(f.output.byteLength, f.bytes);
  }
  // Every shard but one holding a single oversized tensor stays within 30 kB of tensors.
  const index = JSON.parse(new TextDecoder().decode(result.files.at(-1).output));
  for (const f of result.files.slice(0, -1)) {
    const names = Object.keys(index.weight_map).filter((k) => index.weight_map[k] === f.name);
    const sizes = await withModel(f.output, (m) => m.info.tensors.map((x) => x.nbytes));
    const sum = sizes.reduce((a, b) => a + b, 0);
    assert.ok(sum <= 30000 || names.length === 1, `${f.name}: ${sum} bytes in ${names.length} tensors`);
  }
  // A WritableStream per shard works the same.
  const chunks = {};
  const r2 = await withModel(SHARDED, (m) => m.convert({
    dtype: 'f32', maxShardSize: 30000,
    openShard: (name) => new WritableStream({ write: (c) => { (chunks[name] ??= []).push(Buffer.from(c)); } }),
  }));
  for (const f of result.files) assert.ok(Buffer.concat(chunks[f.name]).equals(Buffer.from(f.output)), f.name);
  assert.equal(r2.shards, result.shards);
});

test('single-file forms are unchanged: a .safetensors path, a stream, shards: 1', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'one.safetensors');
  const a = await withModel(SHARDED, (m) => m.convert({ sink: file }));
  assert.equal(a.path, file);
  const b = await withModel(SHARDED, (m) => m.convert({ sink: join(dir, 'plain'), shards: 1 }));
  assert.ok((await readFile(join(dir, 'plain'))).equals(await readFile(file)));
  assert.equal(a.bytes, b.bytes);
  // openShard with shards: 1 opens one sink, under the name the core gives one file.
  const opened = [];
  const c = await withModel(SHARDED, (m) => m.convert({ shards: 1, openShard: (name) => { opened.push(name); return null; } }));
  assert.deepEqual(opened, ['model.safetensors']);
  assert.equal(c.shards, 1);
  assert.equal(c.tensors, a.tensors);
  assert.ok(Buffer.from(c.files[0].output).equals(await readFile(file)));
});

test('misuse and refusals: codes, and nothing left behind', async (t) => {
  const dir = await tempDir(t);
  await withModel(SHARDED, async (m) => {
    await rejectsWith(assert, m.convert({ maxShardSize: '1GB', sink: new WritableStream() }), 'invalid_argument', 'openShard');
    await rejectsWith(assert, m.convert({ shards: 'input', sink: join(dir, 'x.safetensors') }), 'invalid_argument', 'names a file');
    await rejectsWith(assert, m.convert({ shards: 3, sink: join(dir, 'x') }), 'invalid_argument', "shards must be 'input' or 1");
    await rejectsWith(assert, m.convert({ shards: 1, maxShardSize: 5, sink: join(dir, 'x') }), 'invalid_argument', 'contradict');
    await rejectsWith(assert, m.convert({ to: 'gguf', openShard: () => null }), 'unsupported', 'safetensors only');
    await rejectsWith(assert, m.convert({ maxShardSize: '5XB', sink: join(dir, 'x') }), 'invalid_argument', "shard size '5XB'");
    await rejectsWith(assert, m.convert({ openShard: () => null, sink: join(dir, 'x') }), 'invalid_argument', 'not both');
    const existing = join(dir, 'existing');
    await mkdir(existing);
    await writeFile(join(existing, 'keep.txt'), 'keep');
    await rejectsWith(assert, m.convert({ sink: existing }), 'exists', 'already exists');
    assert.deepEqual(await readdir(existing), ['keep.txt']);
    const r = await m.convert({ sink: existing, overwrite: true });
    assert.equal(r.shards, 3);
    assert.deepEqual((await readdir(existing)).sort(), [...SHARDS, INDEX].sort());
  });
  assert.deepEqual((await readdir(dir)).sort(), ['existing'], 'no temporary folder left');
});

// docs/js-api.md's example, `sink: 'out/llama-bf16'`, where out/ does not exist yet.
test('a folder path whose parent folders are missing: they are created', async (t) => {
  const dir = await tempDir(t);
  const out = join(dir, 'out', 'nested', 'tiny-bf16');
  const result = await withModel(SHARDED, (m) => m.convert({ sink: out, dtype: 'bf16' }));
  assert.equal(result.path, out);
  assert.deepEqual((await readdir(out)).sort(), [...SHARDS, INDEX].sort());
  assert.deepEqual(await readdir(join(dir, 'out', 'nested')), ['tiny-bf16'], 'no temporary folder left');
  // Without fsyncs too.
  const scratch = join(dir, 'scratch', 'tiny');
  await withModel(SHARDED, (m) => m.convert({ sink: scratch, sync: false }));
  assert.deepEqual((await readdir(scratch)).sort(), [...SHARDS, INDEX].sort());
});

test('an abort after the first shard leaves no folder', async (t) => {
  const dir = await tempDir(t);
  const copy = join(dir, 'in');
  await cp(SHARDED, copy, { recursive: true });
  const controller = new AbortController();
  const out = join(dir, 'out');
  await withModel(copy, async (m) => {
    let shardsOpened = 0;
    const stopAfterFirst = (p) => { if (p.done > 20000) controller.abort(); };
    await rejectsAborted(assert, m.convert({ sink: out, signal: controller.signal, onProgress: stopAfterFirst }));
    // And through openShard: the shards opened so far are the caller's; the error comes back.
    const c2 = new AbortController();
    await rejectsAborted(assert, m.convert({ openShard: () => { shardsOpened += 1; if (shardsOpened === 2) c2.abort(); return null; }, signal: c2.signal }));
    assert.equal(shardsOpened, 2);
  });
  assert.deepEqual(await readdir(dir), ['in'], 'nothing beside the input');
});

// forget() of a sharded model, and GGUF splits: the folder's files (shards, index,
// config.json), a weight and its companions in one shard, gguf-split's names.
const weightOf = (name) => (name.includes('.weight.') ? name.slice(0, name.indexOf('.weight.') + 7) : name);

test('forget of a sharded model: its shards, the index and config.json, through openShard and a folder', async (t) => {
  const dir = await tempDir(t);
  await withModel(SHARDED, async (m) => {
    assert.deepEqual(m.outputLayout({ scheme: 'nf4' }), { folder: true, sharded: true, name: 'model-nf4' });
    assert.equal(m.outputLayout({ scheme: 'nf4', shards: 1 }).sharded, false);
    const collected = await m.forget({ scheme: 'nf4', openShard: () => null });
    assert.equal(collected.shards, 3);
    assert.deepEqual(collected.files.map((f) => f.name), [...SHARDS, INDEX, 'config.json']);
    assert.equal(collected.lethe.model.quantized > 0, true);
    const out = join(dir, 'nf4');
    const written = await m.forget({ scheme: 'nf4', sink: out });
    assert.equal(written.path, out);
    assert.equal(written.bytes, collected.bytes);
    assert.equal(written.tensors, collected.tensors);
    assert.deepEqual((await readdir(out)).sort(), [...SHARDS, INDEX, 'config.json'].sort());
    for (const f of collected.files) assert.ok(Buffer.from(f.output).equals(await readFile(join(out, f.name))), f.name);
    // The input's boundaries: each weight (and its companions) where the input had it.
    const input = JSON.parse(await readFile(join(SHARDED, INDEX), 'utf8')).weight_map;
    const { weight_map: map } = JSON.parse(await readFile(join(out, INDEX), 'utf8'));
    for (const [name, file] of Object.entries(map)) assert.equal(file, input[weightOf(name)], name);
  });
});

test('forget maxShardSize keeps companions together; a single sink is one file; misuse refused', async () => {
  await withModel(SHARDED, async (m) => {
    const r = await m.forget({ scheme: 'nf4', doubleQuant: true, maxShardSize: 4000, openShard: () => null });
    assert.ok(r.shards > 3);
    const map = JSON.parse(new TextDecoder().decode(r.files.find((f) => f.name === INDEX).output)).weight_map;
    for (const name of Object.keys(map)) assert.equal(map[name], map[weightOf(name)], `${name} beside its weight`);
    const one = await m.forget({ scheme: 'nf4' });  // no sink: one file's bytes
    assert.ok(one.output instanceof Uint8Array);
    await rejectsWith(assert, m.forget({ scheme: 'nf4', maxShardSize: 4000 }), 'invalid_argument', 'needs a folder');
    await rejectsWith(assert, m.forget({ scheme: 'nf4', splitMaxSize: '1G', openShard: () => null }), 'invalid_argument',
      'splitMaxSize splits GGUF output');
  });
});

test('GGUF splits through the API: gguf-split\'s names, one tensor a file', async () => {
  await withModel(SHARDED, async (m) => {
    assert.deepEqual(m.outputLayout({ to: 'gguf', splitMaxTensors: 8 }), { folder: true, sharded: true, name: 'model-converted' });
    const r = await m.convert({ to: 'gguf', splitMaxTensors: 8, openShard: () => null });
    const n = Math.ceil(m.info.tensors.length / 8);
    assert.deepEqual(r.files.map((f) => f.name),
      Array.from({ length: n }, (_, k) => `model-converted-0000${k + 1}-of-0000${n}.gguf`));
    const f = await m.forget({ to: 'gguf', scheme: 'q8_0', pure: true, splitMaxSize: '10KB', openShard: () => null });
    assert.ok(f.shards > 1);
    assert.ok(f.files.every((x, k) => x.name === `model-q8_0-${String(k + 1).padStart(5, '0')}-of-${String(f.shards).padStart(5, '0')}.gguf`));
  });
});
