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
