// NumPy .npz and PyTorch files over HTTP Range: after the end record and the central
// directory, every local header and NPY header comes in one batch (nearby ones merged by
// the core, the rest in multi-range requests of up to 200), and no array data is ever
// fetched. The .npz files are written here (stored entries, array data left as holes) by a
// minimal ZIP writer, as np.savez lays them out.
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

// Writes an .npz of `count` C-order F32 arrays of `shape` (stored entries, the array data
// left as holes: zeros) as np.savez lays it out. Every entry holds the same bytes, so one
// CRC-32 serves all (zlib's crc32 continues from a value over the zeros).
async function writeNpz(path, count, shape) {
  const dataBytes = shape.reduce((a, b) => a * b, 1) * 4;
  const header = npyHeader(shape);
  const zeros = Buffer.alloc(1 << 20);
  let crc = crc32(header);
  for (let n = 0; n < dataBytes; n += zeros.length) crc = crc32(zeros.subarray(0, Math.min(zeros.length, dataBytes - n)), crc);
  const size = header.length + dataBytes;
  const fh = await openFile(path, 'w');
  const central = [];
  let at = 0;
  for (let i = 0; i < count; i += 1) {
    const name = Buffer.from(`layers.${i}.weight.npy`);
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
  end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(count, 8); end.writeUInt16LE(count, 10);
  end.writeUInt32LE(cd.length, 12); end.writeUInt32LE(at, 16);
  await fh.write(Buffer.concat([cd, end]), 0, cd.length + end.length, at);
  await fh.close();
  return { dataBytes, size: at + cd.length + end.length };
}

// The ranges one request asked for.
const rangesOf = (entry) => (entry.range || '').replace(/^bytes=/, '').split(',').filter(Boolean);

// An .npz written by writeNpz, served by a range server that closes with the test.
async function serveNpz(t, name, count, shape) {
  const dir = await tempDir(t);
  const written = await writeNpz(join(dir, name), count, shape);
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  return { server, ...written };
}

test('remote .npz of 24 arrays (200 MB): the head, the tail, then one request for every local + NPY header', async (t) => {
  const shape = [1024, 2048];
  const { server, dataBytes } = await serveNpz(t, 'weights.npz', 24, shape);
  const model = await amn.open(`${server.url}weights.npz`);
  try {
    assert.equal(model.info.format, 'npz');
    assert.equal(model.info.tensors.length, 24);
    for (const x of model.info.tensors) assert.deepEqual([x.dtype, x.shape], ['F32', shape]);
    // The first 64 KiB (no HEAD: its Content-Range gives the size; it holds the first
    // local header too), the 64 KiB tail (end record + central directory), then one
    // multi-range request: the other 23 local headers, each with its NPY header.
    const log = server.stats.log;
    assert.equal(log.length, 3, `requests: ${JSON.stringify(log)}`);
    assert.ok(log.every((r) => r.method === 'GET'), 'no HEAD');
    assert.equal(rangesOf(log[2]).length, 23);
    assert.ok(log[2].bytes < 23 * 512, 'headers, not data');
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

test('remote .npz of 260 arrays of 1 MiB: at most 4 requests (200 headers a request)', async (t) => {
  const shape = [512, 512];
  const { server, size } = await serveNpz(t, 'many.npz', 260, shape);
  assert.ok(size > 260 * 2 ** 20 && size < 2 ** 30);
  const model = await amn.open(`${server.url}many.npz`);
  try {
    assert.equal(model.info.tensors.length, 260);
    assert.deepEqual(model.info.tensors.map((x) => x.name).slice(0, 2), ['layers.0.weight', 'layers.1.weight']);
    const log = server.stats.log;
    assert.ok(log.length <= 4, `${log.length} requests: ${JSON.stringify(log.map((r) => [r.status, rangesOf(r).length]))}`);
    assert.ok(log.every((r) => rangesOf(r).length <= 200));
    assert.ok(server.stats.bytes < 2 * 64 * 1024 + 260 * 512, `transferred ${server.stats.bytes} bytes`);
    t.diagnostic(`${log.length} requests, ${server.stats.bytes} bytes`);
    const w = await model.tensor('layers.259.weight');
    assert.equal(w.data.length, 512 * 512);
    assert.ok(w.data.every((v) => v === 0));
  } finally {
    await model.close();
  }
});

test('a server without multi-range requests (200 for them): one request per header instead, same model', async (t) => {
  const { server } = await serveNpz(t, 'weights.npz', 24, [256, 256]);
  server.multiRange = false;
  const model = await amn.open(`${server.url}weights.npz`);
  try {
    assert.equal(model.info.tensors.length, 24);
    const log = server.stats.log;
    // head, tail, the refused multi-range request (answered 200, its body cancelled), then
    // the 23 headers alone.
    assert.equal(log.length, 3 + 23, JSON.stringify(log.map((r) => [r.status, rangesOf(r).length])));
    assert.deepEqual([log[2].status, rangesOf(log[2]).length], [200, 23]);
    assert.ok(log.slice(3).every((r) => r.status === 206 && rangesOf(r).length === 1));
    const w = await model.tensor('layers.3.weight');
    assert.ok(w.data.every((v) => v === 0));
  } finally {
    await model.close();
  }
});

test('a server that ignores Range gets the clear error for a ZIP too', async (t) => {
  const { server } = await serveNpz(t, 'weights.npz', 4, [256, 256]);
  server.ignoreRange = true;
  await assert.rejects(amn.open(`${server.url}weights.npz`), (err) => {
    assert.equal(err.code, 'io');
    assert.match(err.message, /ignored the Range header/);
    return true;
  });
});

test('remote PyTorch checkpoint of 260 tensors: at most 4 requests, every value right', async (t) => {
  const server = await startRangeServer({ root: join(FIXTURES, 'torch', 'many') });
  t.after(() => server.close());
  const model = await amn.open(`${server.url}many.pt`);
  try {
    assert.equal(model.info.format, 'pth');
    assert.equal(model.info.tensors.length, 260);
    const log = server.stats.log;
    assert.ok(log.length <= 4, `${log.length} requests: ${JSON.stringify(log)}`);
    t.diagnostic(`${log.length} requests, ${server.stats.bytes} of 190247 bytes`);
    // The local headers between the first 64 KiB and the tail are one range (the core merges
    // headers less than 64 KiB apart), and nothing the first read holds is fetched again.
    assert.ok(server.stats.bytes <= 190247, `${server.stats.bytes} bytes`);
    // layers.<i>.weight = arange(128) + 1000 i (fixtures/torch/many/README.md).
    for (let i = 0; i < 260; i += 1) {
      const w = await model.tensor(`layers.${i}.weight`);
      assert.deepEqual([...w.data], Array.from({ length: 128 }, (_, k) => 1000 * i + k), `layers.${i}.weight`);
    }
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
