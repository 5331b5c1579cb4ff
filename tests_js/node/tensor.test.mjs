// model.tensor(): raw values typed by dtype, and casts to bf16 / f16 / f32.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadPackage, rejectsAborted, rejectsWith } from '../support/helpers.js';
import { W_VALUES, bf16Bits, sampleBytes } from '../support/sample.js';
import { makeSafetensors } from '../support/safetensors.js';

const amn = await loadPackage();
const model = await amn.open(sampleBytes());
test.after(() => model.close());

// F16 bits of values that are exact in F16 (normal numbers and zeros only).
function f16Bits(x) {
  if (Object.is(x, 0)) return 0;
  if (Object.is(x, -0)) return 0x8000;
  const sign = x < 0 ? 0x8000 : 0;
  const a = Math.abs(x);
  const e = Math.floor(Math.log2(a));
  return sign | ((e + 15) << 10) | Math.round((a / 2 ** e - 1) * 1024);
}

test('raw tensors come back as the typed array of their dtype', async () => {
  const cases = {
    w: [Float32Array, 'F32', [4, 8], W_VALUES],
    b: [Uint16Array, 'BF16', [8], [1, -1, 2, 0.5, 0, -0, 8, 100].map(bf16Bits)],
    h: [Uint16Array, 'F16', [3], [0x3c00, 0xc000, 0x3800]],
    d: [Float64Array, 'F64', [3], [1.5, -0.25, 1024]],
    i: [Int32Array, 'I32', [5], [1, -2, 3, -4, 2147483647]],
    l: [BigInt64Array, 'I64', [2], [-1n, 1n << 40n]],
    u: [Uint8Array, 'U8', [7], [0, 1, 2, 3, 250, 251, 255]],
  };
  for (const [name, [Type, dtype, shape, values]] of Object.entries(cases)) {
    const t = await model.tensor(name);
    assert.equal(t.name, name);
    assert.equal(t.dtype, dtype, name);
    assert.deepEqual(t.shape, shape, name);
    assert.ok(t.data instanceof Type, `${name}: ${t.data.constructor.name}`);
    assert.deepEqual([...t.data], values, name);
  }
});

test('casts: to bf16, f16 and f32', async () => {
  const w16 = await model.tensor('w', { to: 'bf16' });
  assert.equal(w16.dtype, 'BF16');
  assert.ok(w16.data instanceof Uint16Array);
  assert.deepEqual([...w16.data], W_VALUES.map(bf16Bits));
  const wh = await model.tensor('w', { to: 'f16' });
  assert.equal(wh.dtype, 'F16');
  assert.deepEqual([...wh.data], W_VALUES.map(f16Bits));
  const b32 = await model.tensor('b', { to: 'f32' });
  assert.equal(b32.dtype, 'F32');
  assert.deepEqual([...b32.data], [1, -1, 2, 0.5, 0, -0, 8, 100]);
  const h32 = await model.tensor('h', { to: 'f32' });
  assert.deepEqual([...h32.data], [1, -2, 0.5]);
  const hb = await model.tensor('h', { to: 'bf16' });
  assert.deepEqual([...hb.data], [1, -2, 0.5].map(bf16Bits));
  const d32 = await model.tensor('d', { to: 'f32' });
  assert.deepEqual([...d32.data], [1.5, -0.25, 1024]);
  const same = await model.tensor('w', { to: 'f32' });
  assert.deepEqual([...same.data], W_VALUES);
  assert.equal((await model.tensor('w', { to: 'BF16' })).dtype, 'BF16');  // case-insensitive
});

test('integer tensors are not cast', async () => {
  const t = await model.tensor('i', { to: 'bf16' });
  assert.equal(t.dtype, 'I32');
  assert.deepEqual([...t.data], [1, -2, 3, -4, 2147483647]);
});

test('dequantize() is tensor(): nothing loses precision by default', async () => {
  const t = await model.dequantize('w');
  assert.equal(t.dtype, 'F32');
  assert.deepEqual([...t.data], W_VALUES);
  const h = await model.dequantize('h');
  assert.equal(h.dtype, 'F16');
  assert.deepEqual([...h.data], [0x3c00, 0xc000, 0x3800]);
  assert.equal((await model.dequantize('w', { to: 'bf16' })).dtype, 'BF16');
});

test('unknown names and dtypes', async () => {
  await rejectsWith(assert, model.tensor('nope'), 'not_found', 'nope');
  await rejectsWith(assert, model.tensor('w', { to: 'int4' }), 'invalid_argument');
});

test('concurrent calls are queued and each gets its own result', async () => {
  const [a, b, c] = await Promise.all([model.tensor('w'), model.tensor('b', { to: 'f32' }), model.tensor('u')]);
  assert.deepEqual([...a.data], W_VALUES);
  assert.equal(b.dtype, 'F32');
  assert.equal(c.data.length, 7);
});

test('a tensor larger than one piece (16 MiB) is assembled in order', async () => {
  const n = 5 * 1024 * 1024 + 3;  // 20 MiB of F32
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) values[i] = (i % 509) - 254;  // integers: exact in bf16
  const bytes = makeSafetensors([{ name: 'big', dtype: 'F32', shape: [n], data: new Uint8Array(values.buffer) }]);
  const big = await amn.open(bytes);
  const raw = await big.tensor('big');
  assert.equal(raw.data.length, n);
  assert.ok(Buffer.from(raw.data.buffer).equals(Buffer.from(values.buffer)));
  const cast = await big.tensor('big', { to: 'bf16' });
  assert.equal(cast.data.length, n);
  for (const i of [0, 1, 254, 509, n >> 1, n - 1]) assert.equal(cast.data[i], bf16Bits(values[i]), `element ${i}`);
  await big.close();
});

test('an aborted signal cancels tensor()', async () => {
  const controller = new AbortController();
  controller.abort();
  await rejectsAborted(assert, model.tensor('w', { signal: controller.signal }));
  assert.equal((await model.tensor('w')).data.length, 32);  // the model still works
});
