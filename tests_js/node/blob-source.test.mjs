// Reading a Blob / File (npm/lib/sources.js blobFile): through a BYOB reader of its byte
// stream into buffers the caller recycles, a stream kept open for the next read that
// starts where the last one ended, and ranges larger than the core's host read piece read
// piece by piece into WASM memory. Node's Blob.stream() is a byte stream, as Chromium's is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blobFile } from '../../npm/lib/sources.js';
import { loadPackage, rejectsAborted } from '../support/helpers.js';
import { makeSafetensors } from '../support/safetensors.js';

const amn = await loadPackage();
const pattern = (n) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + (i >> 8)) & 255);

test('a Blob reads the right bytes in order, out of order, and across a kept stream', async () => {
  const bytes = pattern(1 << 20);
  const file = blobFile(new Blob([bytes]), 'b');
  for (const [offset, length] of [[0, 1000], [1000, 70000], [71000, 70000], [141000, 5], [5, 100000], [900000, 148576], [100005, 65536]]) {
    const got = await file.read(offset, length);
    assert.deepEqual(got, bytes.subarray(offset, offset + length), `bytes ${offset}+${length}`);
    file.recycle(got);
  }
  await file.close();
});

test('a recycled buffer takes the next read (its view is detached by it): reading makes no garbage', async () => {
  const K = 64 * 1024;  // reads this large stream (smaller ones are slice().arrayBuffer())
  const file = blobFile(new Blob([pattern(8 * K)]), 'b');
  const first = await file.read(0, 2 * K);
  file.recycle(first);
  const second = await file.read(2 * K, K);
  assert.equal(first.byteLength, 0, 'the first read\'s buffer moved into the second');
  assert.equal(second.buffer.byteLength, 2 * K);
  assert.deepEqual(second, pattern(8 * K).subarray(2 * K, 3 * K));
  const kept = await file.read(5 * K, K);  // the first buffer not recycled: one of its own
  assert.equal(kept.buffer.byteLength, K);
  await file.close();
});

test('small recycled buffers do not crowd out a large one', async () => {
  const K = 64 * 1024;
  const file = blobFile(new Blob([pattern(4 * K)]), 'b');
  const large = await file.read(0, K);
  // A header's small reads, at once: each a buffer of its own, all recycled.
  const small = await Promise.all(Array.from({ length: 20 }, (_, k) => file.read(2 * K + k * 16, 16)));
  small.forEach((b) => file.recycle(b));
  file.recycle(large);
  const next = await file.read(K, K);
  assert.equal(large.byteLength, 0, 'the large buffer took the next large read');
  assert.equal(next.buffer.byteLength, K);
  assert.deepEqual(next, pattern(4 * K).subarray(K, 2 * K));
  await file.close();
});

test('an aborted read of a Blob is an AbortError', async () => {
  const file = blobFile(new Blob([pattern(4096)]), 'b');
  const controller = new AbortController();
  controller.abort();
  await rejectsAborted(assert, file.read(0, 100, controller.signal));
  assert.deepEqual(await file.read(0, 4), pattern(4)); // the file still reads
  await file.close();
});

test('a tensor larger than the host read piece, opened from a Blob, equals the one opened from bytes', async (t) => {
  // 2 × 6 MiB of F32: each above kHostReadPieceBytes (4 MiB), so forget's whole-layer
  // reads fill WASM memory a piece at a time.
  const n = 1536 * 1024;
  const values = (k) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.001 + k) * (1 + (i % 97) / 50));
  const bytes = makeSafetensors([
    { name: 'model.layers.0.mlp.up_proj.weight', dtype: 'F32', shape: [1536, 1024], data: new Uint8Array(values(0).buffer) },
    { name: 'model.layers.1.mlp.up_proj.weight', dtype: 'F32', shape: [1536, 1024], data: new Uint8Array(values(1).buffer) },
  ]);
  const fromBytes = await amn.open(bytes);
  const fromBlob = await amn.open(new Blob([bytes]));
  t.after(() => Promise.all([fromBytes.close(), fromBlob.close()]));
  const a = await fromBytes.forget({ scheme: 'nf4' });
  const b = await fromBlob.forget({ scheme: 'nf4' });
  assert.ok(Buffer.from(a.output).equals(Buffer.from(b.output)), 'the same NF4 bytes');
  assert.deepEqual(await fromBlob.stats('model.layers.1.mlp.up_proj.weight'), await fromBytes.stats('model.layers.1.mlp.up_proj.weight'));
});
