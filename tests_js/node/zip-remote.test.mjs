// NumPy .npz and PyTorch files over HTTP Range: after the end record and the central
// directory, every local header and NPY header comes in one batch, and no array data is
// ever fetched. The .npz is written here (stored entries, array data left as holes) by a
// minimal ZIP writer, as np.savez lays it out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { open as openFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { FIXTURES, loadPackage, tempDir } from '../support/helpers.js';
import { startRangeServer } from '../support/range-server.js';

const amn = await loadPackage();

// An NPY v1 header for a C-order little-endian f32 array, padded to 128 bytes as numpy does.
function npyHeader(shape) {
  const dict = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}), }`;
  const total = 128;
  const text = dict.padEnd(total - 10 - 1, ' ') + '\n';
  const b = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(b);
  b.writeUInt16LE(text.length, 8);
  return Buffer.concat([b, Buffer.from(text, 'latin1')]);
}

test('remote .npz of 24 arrays (200 MB): the tail, then one round of every local + NPY header', async (t) => {
  const dir = await tempDir(t);
  const shape = [1024, 2048];
  const dataBytes = shape[0] * shape[1] * 4;
  // CRC-32 of a header followed by zeros (the holes): zlib's crc32 continues from a value.
  const zeros = Buffer.alloc(1 << 20);
  const fh = await openFile(join(dir, 'weights.npz'), 'w');
  const central = [];
  let at = 0;
  for (let i = 0; i < 24; i += 1) {
    const name = Buffer.from(`layers.${i}.weight.npy`);
    const header = npyHeader(shape);
    let crc = crc32(header);
    for (let n = 0; n < dataBytes; n += zeros.length) crc = crc32(zeros, crc);
    const size = header.length + dataBytes;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0); local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc >>> 0, 14); local.writeUInt32LE(size, 18); local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    await fh.write(Buffer.concat([local, name, header]), 0, 30 + name.length + header.length, at);
    const cd = Buffer.alloc(46);
    cd.writeUInt32LE(0x02014b50, 0); cd.writeUInt16LE(20, 4); cd.writeUInt16LE(20, 6);
    cd.writeUInt32LE(crc >>> 0, 16); cd.writeUInt32LE(size, 20); cd.writeUInt32LE(size, 24);
    cd.writeUInt16LE(name.length, 28); cd.writeUInt32LE(at, 42);
    central.push(Buffer.concat([cd, name]));
    at += 30 + name.length + size;  // the array data stays a hole
  }
  const cd = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(24, 8); end.writeUInt16LE(24, 10);
  end.writeUInt32LE(cd.length, 12); end.writeUInt32LE(at, 16);
  await fh.write(Buffer.concat([cd, end]), 0, cd.length + end.length, at);
  await fh.close();

  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  const model = await amn.open(`${server.url}weights.npz`);
  try {
    assert.equal(model.info.format, 'npz');
    assert.equal(model.info.tensors.length, 24);
    for (const x of model.info.tensors) assert.deepEqual([x.dtype, x.shape], ['F32', shape]);
    // The first 64 KiB (no HEAD: its Content-Range gives the size; it holds the first
    // local header too), the 64 KiB tail (end record + central directory), then one
    // need_bytes round: the other 23 ranges (each local header with its NPY header)
    // fetched concurrently.
    const log = server.stats.log;
    assert.equal(log.length, 2 + 23, `requests: ${JSON.stringify(log)}`);
    assert.ok(log.every((r) => r.method === 'GET'), 'no HEAD');
    assert.ok(log.slice(2).every((r) => r.bytes < 512), 'each header request is a header, not data');
    assert.ok(server.stats.bytes < 2 * 64 * 1024 + 24 * 512, `transferred ${server.stats.bytes} bytes`);  // head, tail, headers
    t.diagnostic(`${server.stats.requests} requests, ${server.stats.bytes} bytes`);
    // One array read through ranges: the zeros numpy would load.
    server.reset();
    const w = await model.tensor('layers.23.weight');
    assert.equal(w.data.length, shape[0] * shape[1]);
    assert.ok(w.data.every((v) => v === 0));
    assert.ok(server.stats.bytes <= dataBytes + 4096, `read ${server.stats.bytes} bytes for one ${dataBytes}-byte array`);
  } finally {
    await model.close();
  }
});

test('remote PyTorch checkpoint: a few requests, and its tensors by range', async (t) => {
  const server = await startRangeServer({ root: join(FIXTURES, 'torch', 'valid') });
  t.after(() => server.close());
  const model = await amn.open(`${server.url}pytorch_model.bin`);
  try {
    assert.equal(model.info.format, 'pth');
    assert.ok(model.info.tensors.length > 10);
    assert.ok(server.stats.requests <= 4, `requests: ${JSON.stringify(server.stats.log)}`);
  } finally {
    await model.close();
  }
});
