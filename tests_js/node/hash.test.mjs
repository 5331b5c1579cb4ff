// model.hash() in the npm package (WASM core): over the stored bytes, and with
// { dequantized: true } over the values, which for ggml's own blocks are ggml's to_float
// output (fixtures/ggml/manifest.json's f32_sha256).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, loadPackage } from '../support/helpers.js';

const amn = await loadPackage();

test('hash({ dequantized: true }): every GGUF block type hashes as ggml dequantized it', async () => {
  const manifest = JSON.parse(await readFile(join(FIXTURES, 'ggml', 'manifest.json'), 'utf8'));
  const f32 = new Map(manifest.types.filter((t) => !t.random).map((t) => [`blk.${t.name.toLowerCase()}`, t.f32_sha256]));
  const model = await amn.open(await readFile(join(FIXTURES, 'gguf', 'valid', 'ggml_blocks.gguf')), { name: 'ggml_blocks.gguf' });
  try {
    const values = await model.hash({ dequantized: true });
    assert.equal(values.dequantized, true);
    assert.ok(values.tensors.length > 20);
    for (const t of values.tensors) assert.equal(t.sha256, f32.get(t.name), t.name);
    const stored = await model.hash();
    assert.equal(stored.dequantized, false);
    assert.deepEqual(stored.tensors.map((t) => t.name), values.tensors.map((t) => t.name));
    assert.ok(stored.tensors.every((t, i) => t.sha256 !== values.tensors[i].sha256 && t.bytes < values.tensors[i].bytes));
  } finally {
    await model.close();
  }
});

test('hash({ dequantized: true }) of Q8_0 and Q4_0 blocks holding the same values: equal', async () => {
  const dir = join(FIXTURES, 'gguf', 'same_values');
  const expected = JSON.parse(await readFile(join(dir, 'expected.json'), 'utf8'));
  for (const f of ['q8_0.gguf', 'q4_0.gguf']) {
    const model = await amn.open(await readFile(join(dir, f)), { name: f });
    try {
      const h = await model.hash({ dequantized: true });
      assert.deepEqual(h.tensors.map((t) => t.sha256), expected.tensors.map((t) => t.sha256), f);
      assert.equal(h.model.sha256, expected.model.sha256, f);
    } finally {
      await model.close();
    }
  }
});
