// npm diff(a, b): the core's comparison of two models, each read through its own source
// (paths, bytes, a URL by HTTP Range), equal to what numpy computed (fixtures/diff).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPackage, rejectsAborted, rejectsWith } from '../support/helpers.js';
import { startRangeServer } from '../support/range-server.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const amn = await loadPackage();
const fixture = (rel) => join(root, 'fixtures', rel);
const A = fixture('diff/a.safetensors');
const B = fixture('diff/b.safetensors');
const expected = JSON.parse(readFileSync(fixture('diff/pair.expected.json'), 'utf8'));

function close(got, want, name) {
  if (want === null) return assert.equal(got, null, name);
  assert.ok(Math.abs(got - want) <= 1e-12 * Math.max(1, Math.abs(want)), `${name}: ${got} vs ${want}`);
}

test('diff(paths): statuses and numbers as numpy computed them', async () => {
  const d = await amn.diff(A, B);
  assert.equal(d.identical, false);
  assert.equal(d.tensors.length, expected.tensors.length);
  for (const [i, want] of expected.tensors.entries()) {
    const got = d.tensors[i];
    assert.equal(got.name, want.name);
    assert.equal(got.status, want.status, want.name);
    if (want.elements === undefined) {
      assert.equal(got.mae, null, want.name);
      continue;
    }
    for (const k of ['elements', 'equal', 'nonfinite', 'nonfinite_mismatch']) assert.equal(got[k], want[k], `${want.name}.${k}`);
    for (const k of ['max_abs_diff', 'mae', 'rmse', 'cosine', 'snr_db']) close(got[k], want[k], `${want.name}.${k}`);
  }
});

test('diff of open models, one local and one remote: the same result; the models stay open', async (t) => {
  const server = await startRangeServer({ root: fixture('diff') });
  t.after(() => server.close());
  const a = await amn.open(readFileSync(A));
  const b = await amn.open(`${server.url}b.safetensors`);
  const d = await amn.diff(a, b, { text: true });
  assert.deepEqual({ ...d, text: undefined }, { ...(await amn.diff(A, B)), text: undefined });
  assert.match(d.text, /\nthe models differ\n$/);
  assert.equal((await a.stats('w')).count, 512);  // still open
  // Two diffs in opposite directions at once finish (each waits for both models' turns).
  const [ab, ba] = await Promise.all([amn.diff(a, b), amn.diff(b, a)]);
  assert.equal(ab.tensors.length, ba.tensors.length);
  assert.equal(ba.tensors.find((t) => t.name === 'only_b').status, 'only_in_a');
  const same = await amn.diff(a, a);
  assert.equal(same.identical, true);
  await a.close();
  await b.close();
});

test('diff: progress, cancelling, and errors', async () => {
  const seen = [];
  await amn.diff(A, B, { onProgress: (p) => seen.push(p) });
  assert.ok(seen.length > 0);
  assert.equal(seen.at(-1).done, seen.at(-1).total);
  const controller = new AbortController();
  controller.abort();
  await rejectsAborted(assert, amn.diff(A, B, { signal: controller.signal }));
  await rejectsWith(assert, amn.diff(A, fixture('diff/none.safetensors')), 'io');
});

test('diff of a Hugging Face checkpoint and llama.cpp\'s Q8_0 GGUF of it: gguf-py\'s numbers, through the names', async () => {
  const want = JSON.parse(readFileSync(fixture('diff/tiny_llama_hf-Q8_0.expected.json'), 'utf8'));
  const hf = fixture('diff/tiny_llama_hf/model.safetensors');
  const gguf = fixture('diff/tiny_llama_hf-Q8_0.gguf');
  const d = await amn.diff(hf, gguf);
  assert.equal(d.name_map, 'llama');
  assert.equal(d.tensors.length, want.tensors.length);
  for (const [i, w] of want.tensors.entries()) {
    const got = d.tensors[i];
    assert.deepEqual([got.name, got.name_b, got.status], [w.name, w.name_b, w.status]);
    for (const k of ['elements', 'equal']) assert.equal(got[k], w[k], `${w.name}.${k}`);
    // gguf-py's numpy Q8_0 dequantizer and ggml's may round an F32 value apart.
    for (const k of ['max_abs_diff', 'mae', 'rmse', 'cosine']) {
      assert.ok(Math.abs(got[k] - w[k]) <= 1e-6 * Math.max(1e-9, Math.abs(w[k])), `${w.name}.${k}: ${got[k]} vs ${w[k]}`);
    }
  }
  const exact = await amn.diff(hf, gguf, { exactNames: true });
  assert.equal(exact.name_map, undefined);
  assert.equal(exact.tensors.filter((t) => t.status === 'only_in_a').length, 21);
});
