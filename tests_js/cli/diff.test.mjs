// amn diff: the native amn and the Node CLI (npm/bin/amn.js, WASM) print the same bytes
// and exit with the same status (0 identical, 3 different, 1 error, 2 misuse).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/dist/amn.cjs');
const A = 'fixtures/diff/a.safetensors';
const B = 'fixtures/diff/b.safetensors';
const F16 = 'fixtures/gguf_ftype/tiny_llama_f16.gguf';
const Q4 = 'fixtures/gguf_ftype/tiny-Q4_K_M.gguf';

function run(native, args) {
  const r = native
    ? spawnSync(AMN, args, { encoding: 'utf8', cwd: root })
    : spawnSync(process.execPath, [NODE_AMN, ...args], { encoding: 'utf8', cwd: root });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function same(args) {
  const a = run(true, args);
  const b = run(false, args);
  assert.equal(b.code, a.code, `exit status of ${args.join(' ')}`);
  assert.equal(b.out, a.out, `stdout of ${args.join(' ')}`);
  assert.equal(b.err, a.err, `stderr of ${args.join(' ')}`);
  return a;
}

test('diff of a model with itself: identical, exit status 0, on both CLIs', () => {
  const r = same(['diff', Q4, Q4]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /the models are identical\n$/);
  const j = same(['diff', Q4, Q4, '--json']);
  assert.equal(j.code, 0);
  const doc = JSON.parse(j.out);
  assert.equal(doc.identical, true);
  assert.ok(doc.tensors.every((t) => t.status === 'identical' && t.max_abs_diff === 0));
});

test('diff of different models: exit status 3, the same table and JSON on both CLIs', () => {
  const r = same(['diff', A, B]);
  assert.equal(r.code, 3, r.err);
  assert.match(r.out, /^tensor +status +A +B +max \|Δ\| +MAE +RMSE +cosine +SNR dB\n/);
  assert.match(r.out, /\nthe models differ\n$/);
  const j = same(['diff', A, B, '--json']);
  assert.equal(j.code, 3);
  const doc = JSON.parse(j.out);
  const expected = JSON.parse(readFileSync(join(root, 'fixtures/diff/pair.expected.json'), 'utf8'));
  assert.equal(doc.identical, false);
  assert.deepEqual(doc.tensors.map((t) => [t.name, t.status]), expected.tensors.map((t) => [t.name, t.status]));
  // An F16 GGUF against llama-quantize's Q4_K_M of it: the statuses gguf-py's values give.
  const q = JSON.parse(same(['diff', F16, Q4, '--json']).out);
  const qe = JSON.parse(readFileSync(join(root, 'fixtures/diff/tiny-Q4_K_M.expected.json'), 'utf8'));
  assert.deepEqual(q.tensors.map((t) => t.status), qe.tensors.map((t) => t.status));
});

test('a Hugging Face checkpoint against llama.cpp GGUFs of it: matched through the GGUF names on both CLIs', () => {
  const HF = 'fixtures/diff/tiny_llama_hf';
  for (const quant of ['bf16', 'Q8_0']) {
    const gguf = `fixtures/diff/tiny_llama_hf-${quant}.gguf`;
    const j = same(['diff', HF, gguf, '--json']);
    assert.equal(j.code, 3, j.err);
    const doc = JSON.parse(j.out);
    const want = JSON.parse(readFileSync(join(root, `fixtures/diff/tiny_llama_hf-${quant}.expected.json`), 'utf8'));
    assert.equal(doc.name_map, 'llama');
    assert.deepEqual(doc.tensors.map((t) => [t.name, t.name_b, t.status]), want.tensors.map((t) => [t.name, t.name_b, t.status]));
    assert.equal(doc.tensors.filter((t) => t.rows_permuted).length, 4);
  }
  const r = same(['diff', HF, 'fixtures/diff/tiny_llama_hf-Q8_0.gguf']);
  assert.match(r.out, /\nmodel\.layers\.0\.self_attn\.q_proj\.weight = blk\.0\.attn_q\.weight +different +BF16 +Q8_0 /);
  assert.match(r.out, /\n21 matched through llama\.cpp's llama GGUF <-> Hugging Face names \(q \/ k rows compared in one order\)\n/);
  // --exact-names: plain names only, and none is shared.
  const exact = JSON.parse(same(['diff', HF, 'fixtures/diff/tiny_llama_hf-Q8_0.gguf', '--exact-names', '--json']).out);
  assert.equal(exact.name_map, undefined);
  assert.equal(exact.tensors.length, 42);
  assert.ok(exact.tensors.every((t) => t.status === 'only_in_a' || t.status === 'only_in_b'));
});

test('qwen2 and qwen3 checkpoints against llama.cpp GGUFs of them: every tensor matched on both CLIs', () => {
  for (const arch of ['qwen2', 'qwen3']) {
    const j = same(['diff', `fixtures/diff/tiny_${arch}_hf`, `fixtures/diff/tiny_${arch}_hf-bf16.gguf`, '--json']);
    assert.equal(j.code, 3, j.err);
    const doc = JSON.parse(j.out);
    const want = JSON.parse(readFileSync(join(root, `fixtures/diff/tiny_${arch}_hf-bf16.expected.json`), 'utf8'));
    assert.equal(doc.name_map, arch);
    assert.deepEqual(doc.tensors.map((t) => [t.name, t.name_b, t.status]), want.tensors.map((t) => [t.name, t.name_b, t.status]));
    assert.ok(doc.tensors.every((t) => !t.rows_permuted));
  }
});

test('diff errors and misuse: exit 1 for an input that does not open, 2 for a missing argument', () => {
  const missing = same(['diff', A, 'fixtures/diff/none.safetensors']);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /^amn: error \[io\]/);
  const usage = same(['diff', A]);
  assert.equal(usage.code, 2);
  const help = same(['diff', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /Usage: amn diff/);
});
