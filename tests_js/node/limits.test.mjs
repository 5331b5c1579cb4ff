// Limits passed to open() hold for everything done with the model: a raised
// maxDecompressionRatio lets a highly compressed .npz convert (it used to inspect, then
// fail to convert with the default ratio), and a tightened one is applied when converting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc32, deflateRawSync } from 'node:zlib';
import { loadPackage } from '../support/helpers.js';

const amn = await loadPackage();

// An .npz of one float32 array of zeros, DEFLATE-compressed (about 1030:1 for zeros).
function zerosNpz(elements) {
  let dict = `{'descr': '<f4', 'fortran_order': False, 'shape': (${elements},), }`;
  while ((10 + dict.length + 1) % 64 !== 0) dict += ' ';
  const header = Buffer.concat([Buffer.from([0x93]), Buffer.from('NUMPY'), Buffer.from([1, 0]),
    Buffer.from([(dict.length + 1) & 0xff, (dict.length + 1) >> 8]), Buffer.from(`${dict}\n`)]);
  const npy = Buffer.concat([header, Buffer.alloc(elements * 4)]);
  const data = deflateRawSync(npy, { level: 9 });
  const name = Buffer.from('w.npy');
  const crc = crc32(npy);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0); local.writeUInt16LE(20, 4); local.writeUInt16LE(8, 8);
  local.writeUInt32LE(crc, 14); local.writeUInt32LE(data.length, 18); local.writeUInt32LE(npy.length, 22);
  local.writeUInt16LE(name.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0); central.writeUInt16LE(20, 4); central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10); central.writeUInt32LE(crc, 16); central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(npy.length, 24); central.writeUInt16LE(name.length, 28);
  const cdOffset = local.length + name.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(1, 8); end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + name.length, 12); end.writeUInt32LE(cdOffset, 16);
  return { bytes: new Uint8Array(Buffer.concat([local, name, data, central, name, end])), ratio: npy.length / data.length };
}

const ELEMENTS = 4 << 20;  // 16 MiB of zeros

test('a raised maxDecompressionRatio holds when converting, not only when opening', async () => {
  const { bytes, ratio } = zerosNpz(ELEMENTS);
  assert.ok(ratio > 1000, `the fixture compresses ${ratio.toFixed(0)}:1, above the default 1000`);
  const model = await amn.open(bytes, { name: 'zeros.npz', limits: { maxDecompressionRatio: 5000 } });
  const t = await model.tensor('w', { to: 'f32' });
  assert.equal(t.data.length, ELEMENTS);
  assert.ok(t.data.every((v) => v === 0));
  const out = await model.convert();
  assert.ok(out.byteLength > ELEMENTS * 4);
  await model.close();
});

test('a tightened maxDecompressionRatio is applied when converting', async () => {
  const { bytes } = zerosNpz(1 << 16);
  const model = await amn.open(bytes, { name: 'zeros.npz', limits: { maxDecompressionRatio: 2 } }).catch((e) => e);
  if (model instanceof Error) {  // refused while reading the header: applied too
    assert.equal(model.code, 'limit');
    return;
  }
  await assert.rejects(model.convert(), (e) => e.code === 'limit');
  await model.close();
});

test('bad limits are refused by the core with invalid_argument', async () => {
  await assert.rejects(amn.open(zerosNpz(16).bytes, { limits: { maxItemCount: -1 } }), (e) => e.code === 'invalid_argument' && /maxItemCount/.test(e.message));
  await assert.rejects(amn.open(zerosNpz(16).bytes, { limits: { maxWhatever: 1 } }), (e) => e.code === 'invalid_argument' && /maxWhatever/.test(e.message));
});
