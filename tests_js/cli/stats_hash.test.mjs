// amn stats and amn hash: the native amn and the Node CLI (npm/bin/amn.js, WASM) print the
// same bytes; hash --gguf-hash prints llama.cpp gguf-hash's own lines (fixtures/gguf/gguf_hash).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/dist/amn.cjs');
const VALID = join(root, 'fixtures/gguf/valid');

function run(native, args, cwd = root) {
  const r = native
    ? spawnSync(AMN, args, { encoding: 'utf8', cwd })
    : spawnSync(process.execPath, [NODE_AMN, ...args], { encoding: 'utf8', cwd });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

function same(args, cwd) {
  const a = run(true, args, cwd);
  const b = run(false, args, cwd);
  assert.equal(b.code, a.code, `exit status of ${args.join(' ')}`);
  assert.equal(b.out, a.out, `stdout of ${args.join(' ')}`);
  assert.equal(b.err, a.err, `stderr of ${args.join(' ')}`);
  return a;
}

const MODELS = [
  'fixtures/gguf/valid/ggml_blocks.gguf',
  'fixtures/models/tiny-mlp/model.safetensors',
  'fixtures/safetensors/valid/all_dtypes.safetensors',
];

test('stats: both CLIs print the same text and JSON', () => {
  for (const m of MODELS) {
    const t = same(['stats', m]);
    assert.equal(t.code, 0, t.err);
    const j = same(['stats', m, '--json']);
    const doc = JSON.parse(j.out);
    assert.ok(doc.tensors.length > 0);
  }
  const one = same(['stats', MODELS[0], 'blk.q8_0', '--json']);
  assert.deepEqual(JSON.parse(one.out).tensors.map((t) => t.name), ['blk.q8_0']);
  const missing = same(['stats', MODELS[0], 'nope']);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /not_found/);
});

test('hash: both CLIs print the same text and JSON', () => {
  for (const m of MODELS) {
    assert.equal(same(['hash', m]).code, 0);
    const j = JSON.parse(same(['hash', m, '--json']).out);
    assert.equal(j.model.tensors, j.tensors.length);
  }
});

test('hash --gguf-hash: llama.cpp gguf-hash --all --uuid, byte for byte, on both CLIs', () => {
  for (const stem of ['ggml_blocks', 'tensor_types']) {
    const expected = readFileSync(join(root, 'fixtures/gguf/gguf_hash', `${stem}.all_uuid.txt`), 'utf8');
    const r = same(['hash', '--gguf-hash', `${stem}.gguf`], VALID);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, expected);
  }
});

test('stats and hash help come from the core, the same on both CLIs', () => {
  for (const verb of ['stats', 'hash']) {
    const h = same([verb, '--help']);
    assert.equal(h.code, 0);
    assert.match(h.out, new RegExp(`Usage: amn ${verb}`));
  }
});

test('hash --dequantized: the same values stored as Q8_0, Q4_0 and F32 hash the same, on both CLIs', () => {
  // fixtures/gguf/same_values: expected.json's digests are numpy's F32 bytes through hashlib.
  const dir = join(root, 'fixtures/gguf/same_values');
  const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8'));
  const stored = new Set();
  for (const f of ['q8_0.gguf', 'q4_0.gguf', 'f32.gguf']) {
    const r = same(['hash', '--dequantized', '--json', f], dir);
    assert.equal(r.code, 0, r.err);
    const doc = JSON.parse(r.out);
    assert.equal(doc.dequantized, true);
    assert.deepEqual(doc.tensors.map((t) => [t.name, t.bytes, t.sha256]), expected.tensors.map((t) => [t.name, t.bytes, t.sha256]), f);
    assert.deepEqual([doc.model.bytes, doc.model.sha256], [expected.model.bytes, expected.model.sha256], f);
    assert.equal(same(['hash', '--dequantized', f], dir).code, 0);
    stored.add(JSON.parse(same(['hash', '--json', f], dir).out).tensors[0].sha256);
  }
  assert.equal(stored.size, 3, 'the stored bytes differ');
  for (const m of MODELS) assert.equal(same(['hash', '--dequantized', m]).code, 0);
  // gguf-hash's lines are of the stored bytes: the two options do not mix.
  const both = same(['hash', '--dequantized', '--gguf-hash', MODELS[0]]);
  assert.equal(both.code, 2);
  assert.match(both.err, /excludes/);
});
