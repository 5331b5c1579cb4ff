// GGUF through the npm API: every plain tensor of every valid fixture reads back as the
// values gguf-py reads (sha256 of their little-endian bytes), big-endian files included;
// every block type dequantizes as ggml's to_float does; unknown types are `unsupported`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, bytesOf, loadPackage, rejectsWith, sha256 } from '../support/helpers.js';

const amn = await loadPackage();
const VALID = join(FIXTURES, 'gguf', 'valid');

test('plain GGUF tensors read back as gguf-py reads them, in either byte order', async () => {
  let checked = 0;
  for (const name of readdirSync(VALID).filter((n) => n.endsWith('.gguf'))) {
    const want = JSON.parse(readFileSync(join(FIXTURES, 'gguf', 'expected', name.replace('.gguf', '.json')), 'utf8'));
    const model = await amn.open(join(VALID, name));
    for (const t of want.tensors.filter((x) => x.sha256_le)) {
      const got = await model.tensor(t.name);
      assert.equal(got.dtype, t.type_name, `${name}:${t.name}`);
      assert.equal(sha256(bytesOf(got.data)), t.sha256_le, `${name}:${t.name} (${want.big_endian ? 'big' : 'little'}-endian)`);
      checked++;
    }
    await model.close();
  }
  assert.ok(checked >= 15, `only ${checked} tensors checked`);
});

test('every GGUF block type dequantizes bit-exact with ggml\'s to_float, in WASM, in either byte order', async () => {
  for (const name of ['ggml_blocks', 'ggml_blocks_be']) {
  const want = JSON.parse(readFileSync(join(FIXTURES, 'gguf', 'expected', `${name}.json`), 'utf8'));
  const model = await amn.open(join(VALID, `${name}.gguf`));
  for (const t of want.tensors.filter((x) => x.f32_sha256)) {
    const got = await model.tensor(t.name, { to: 'f32' });
    assert.equal(got.dtype, 'F32');
    assert.equal(sha256(bytesOf(got.data)), t.f32_sha256, `${name}: ${t.name} differs from ggml`);
  }
  await model.close();
  }
});

test('unknown GGUF types are refused clearly', async () => {
  const model = await amn.open(join(VALID, 'unknown_type.gguf'));
  await rejectsWith(assert, model.tensor('mystery'), 'unsupported', 'type 99');
  await model.close();
});
