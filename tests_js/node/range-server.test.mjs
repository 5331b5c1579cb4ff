// The test range server (also used by the browser tests) handles every Range form.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '../support/helpers.js';
import { parseRange, startRangeServer } from '../support/range-server.js';

test('parseRange', () => {
  assert.deepEqual(parseRange('bytes=0-9', 100), { start: 0, end: 9 });
  assert.deepEqual(parseRange('bytes=90-', 100), { start: 90, end: 99 });
  assert.deepEqual(parseRange('bytes=-10', 100), { start: 90, end: 99 });
  assert.deepEqual(parseRange('bytes=-1000', 100), { start: 0, end: 99 });
  assert.deepEqual(parseRange('bytes=50-1000', 100), { start: 50, end: 99 });
  assert.equal(parseRange('bytes=100-', 100), null);
  assert.equal(parseRange('bytes=-0', 100), null);
  assert.equal(parseRange(undefined, 100), undefined);
  assert.equal(parseRange('bytes=0-1,5-6', 100), undefined);
  assert.equal(parseRange('bytes=9-2', 100), undefined);
});

test('serves ranges, HEAD, 404 and 416, counts requests and bytes, can ignore Range', async (t) => {
  const dir = await tempDir(t);
  const data = Buffer.from(Array.from({ length: 100 }, (_, i) => i));
  await writeFile(join(dir, 'a.bin'), data);
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  const get = async (range, method = 'GET', path = 'a.bin') => {
    const res = await fetch(server.url + path, { method, headers: range ? { Range: range } : {} });
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  };
  let r = await get('bytes=10-19');
  assert.equal(r.status, 206);
  assert.equal(r.headers.get('content-range'), 'bytes 10-19/100');
  assert.deepEqual(r.body, data.subarray(10, 20));
  r = await get('bytes=-5');
  assert.deepEqual(r.body, data.subarray(95));
  r = await get('bytes=98-');
  assert.deepEqual(r.body, data.subarray(98));
  r = await get('bytes=100-');
  assert.equal(r.status, 416);
  assert.equal(r.headers.get('content-range'), 'bytes */100');
  r = await get(null, 'HEAD');
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('accept-ranges'), 'bytes');
  assert.equal(r.headers.get('content-length'), '100');
  assert.equal(r.body.length, 0);
  assert.equal((await get(null, 'GET', 'missing.bin')).status, 404);
  assert.equal((await get(null, 'GET', '..%2f..%2fetc%2fpasswd')).status, 403);
  assert.equal(server.stats.files['/a.bin'].requests, 5);
  assert.equal(server.stats.files['/a.bin'].bytes, 10 + 5 + 2);
  assert.equal(server.stats.requests, 7);

  server.reset();
  assert.equal(server.stats.requests, 0);
  server.ignoreRange = true;
  r = await get('bytes=10-19');
  assert.equal(r.status, 200);
  assert.equal(r.body.length, 100);
  assert.equal(r.headers.get('accept-ranges'), null);
  assert.equal(server.stats.bytes, 100);
});

test('multi-range requests: multipart/byteranges parts, read back by the package', async (t) => {
  const { multipartParts } = await import('../../npm/lib/sources.js');
  const dir = await tempDir(t);
  // Bytes that hold the boundary's own text: a part is located by its Content-Range
  // length, never by searching for the boundary.
  const data = Buffer.concat([Buffer.from('\r\n--amn-test-boundary\r\n'), Buffer.from(Array.from({ length: 200 }, (_, i) => i))]);
  await writeFile(join(dir, 'a.bin'), data);
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  const res = await fetch(`${server.url}a.bin`, { headers: { Range: 'bytes=0-29,100-109,-5' } });
  assert.equal(res.status, 206);
  const boundary = /boundary=(\S+)/.exec(res.headers.get('content-type'))[1];
  const parts = multipartParts(new Uint8Array(await res.arrayBuffer()), boundary);
  assert.deepEqual(parts.map((p) => p.start), [0, 100, data.length - 5]);
  assert.deepEqual(Buffer.from(parts[0].bytes), data.subarray(0, 30));
  assert.deepEqual(Buffer.from(parts[1].bytes), data.subarray(100, 110));
  assert.deepEqual(Buffer.from(parts[2].bytes), data.subarray(data.length - 5));
  // A body cut short ends the list where the parts stop being whole.
  const whole = new Uint8Array(await (await fetch(`${server.url}a.bin`, { headers: { Range: 'bytes=0-29,100-109' } })).arrayBuffer());
  assert.equal(multipartParts(whole.subarray(0, whole.length - 30), boundary).length, 1);
  // Without multi-range support (S3): the whole file, HTTP 200.
  server.multiRange = false;
  const plain = await fetch(`${server.url}a.bin`, { headers: { Range: 'bytes=0-1,5-6' } });
  assert.equal(plain.status, 200);
  assert.equal((await plain.arrayBuffer()).byteLength, data.length);
});
