// model.forget() of a sharded model, and GGUF splits through the npm API: the folder's
// files (shards, index, config.json) through openShard and a Node folder path, a weight
// and its companions in one shard, gguf-split's names, and outputLayout's answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, loadPackage, rejectsWith, tempDir } from '../support/helpers.js';

const amn = await loadPackage();
const SHARDED = join(FIXTURES, 'models', 'tiny-sharded');
const INDEX = 'model.safetensors.index.json';
const SHARDS = ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors'];

async function withModel(source, fn) {
  const model = await amn.open(source);
  try { return await fn(model); } finally { await model.close(); }
}

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
