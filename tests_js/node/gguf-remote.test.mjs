// GGUF over HTTP Range: a header holding a 150k-entry tokenizer is inspected in at most 3
// requests (no HEAD: the first read, 1 MiB for a .gguf, gives the size), transferring at most 1.5 × the header + 1 MiB, and no
// tensor data; a small header is parsed without waiting for the rest of that first 1 MiB.
// The file is written here by a minimal GGUF v3 writer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { open as openFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPackage, tempDir } from '../support/helpers.js';
import { startRangeServer } from '../support/range-server.js';

const amn = await loadPackage();

// GGUF v3 little-endian: KV types STRING = 8, ARRAY = 9, FLOAT32 = 6; tensor type F32 = 0.
function ggufHeader({ tokens, tensorElements }) {
  const parts = [];
  const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
  const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
  const str = (s) => { const b = Buffer.from(s, 'utf8'); u64(b.length); parts.push(b); };
  parts.push(Buffer.from('GGUF'));
  u32(3);
  u64(1);  // tensors
  u64(4);  // KVs
  str('general.architecture'); u32(8); str('llama');
  str('tokenizer.ggml.model'); u32(8); str('gpt2');
  str('tokenizer.ggml.tokens'); u32(9); u32(8); u64(tokens.length);
  for (const t of tokens) str(t);
  str('tokenizer.ggml.scores'); u32(9); u32(6); u64(tokens.length);
  const scores = Buffer.alloc(4 * tokens.length);
  tokens.forEach((_, i) => scores.writeFloatLE(-i, 4 * i));
  parts.push(scores);
  str('token_embd.weight'); u32(2); u64(tensorElements[0]); u64(tensorElements[1]); u32(0); u64(0);
  const header = Buffer.concat(parts);
  const padded = Math.ceil(header.length / 32) * 32;
  return Buffer.concat([header, Buffer.alloc(padded - header.length)]);
}

test('remote GGUF with a 150k-token vocabulary: <= 3 requests, <= 1.5 x header + 1 MiB', async (t) => {
  const dir = await tempDir(t);
  const tokens = Array.from({ length: 150_000 }, (_, i) => `tok_${i}_${'x'.repeat(i % 13)}`);
  const header = ggufHeader({ tokens, tensorElements: [4096, 150_000] });
  const dataBytes = 4096 * 150_000 * 4;  // 2.3 GiB of F32, a hole on disk
  const fh = await openFile(join(dir, 'model.gguf'), 'w');
  await fh.write(header, 0, header.length, 0);
  await fh.truncate(header.length + dataBytes);
  await fh.close();

  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  const model = await amn.open(`${server.url}model.gguf`);
  const info = model.info;
  assert.equal(info.format, 'gguf');
  assert.equal(info.details.kv['tokenizer.ggml.tokens'].value.length, 150_000);
  assert.equal(info.details.kv['tokenizer.ggml.tokens'].value[149_999], tokens[149_999]);
  assert.deepEqual(info.tensors.map((x) => [x.name, x.dtype, x.shape, x.nbytes]),
    [['token_embd.weight', 'F32', [150_000, 4096], dataBytes]]);
  assert.ok(server.stats.requests <= 3, `requests: ${JSON.stringify(server.stats.log)}`);
  assert.ok(server.stats.bytes <= 1.5 * header.length + 2 ** 20,
    `transferred ${server.stats.bytes} bytes for a ${header.length}-byte header`);
  t.diagnostic(`${server.stats.requests} requests, ${server.stats.bytes} bytes for a ${header.length}-byte header`);
  await model.close();
});

// A header that fits the first read: one request (the core's first 1 MiB window, asked
// for in the first GET), however large the tensor data behind it.
test('remote GGUF with a small header: one ranged GET of the core\'s first window', async (t) => {
  const dir = await tempDir(t);
  const header = ggufHeader({ tokens: ['a', 'b', 'c'], tensorElements: [4096, 65536] });
  const fh = await openFile(join(dir, 'small.gguf'), 'w');
  await fh.write(header, 0, header.length, 0);
  await fh.truncate(header.length + 4096 * 65536 * 4);
  await fh.close();
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  const model = await amn.open(`${server.url}small.gguf`);
  assert.equal(model.info.details.kv['tokenizer.ggml.tokens'].value.length, 3);
  assert.equal(server.stats.requests, 1, `requests: ${JSON.stringify(server.stats.log)}`);
  assert.ok(server.stats.log.every((r) => r.method === 'GET' && r.range), JSON.stringify(server.stats.log));
  await model.close();
});

// The first request asks for 1 MiB, but a small header is parsed as soon as the parser's
// first 64 KiB have come: a server that sends those and then nothing more (a slow link,
// the rest in flight) does not hold open() up, with either transport. Before, open()
// waited for the whole first request.
test('remote GGUF: open() does not wait for the rest of the first request', { timeout: 30_000 }, async (t) => {
  const header = ggufHeader({ tokens: ['a', 'b', 'c'], tensorElements: [4096, 65536] });
  const size = header.length + 4096 * 65536 * 4;
  const head = Buffer.alloc(64 * 1024);  // the header, then zeros of the tensor
  header.copy(head);
  const { createServer } = await import('node:http');
  const stalled = [];
  const server = createServer((req, res) => {
    const m = /^bytes=0-(\d+)$/.exec(req.headers.range ?? '');
    const end = Math.min(Number(m[1]), size - 1);
    res.writeHead(206, { 'Content-Range': `bytes 0-${end}/${size}`, 'Content-Length': String(end + 1) });
    res.write(head);  // then silence
    stalled.push([req.headers.range, res]);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => { for (const [, res] of stalled) res.destroy(); server.closeAllConnections(); server.close(); });
  const url = `http://127.0.0.1:${server.address().port}/small.gguf`;
  for (const options of [{}, { fetch }]) {
    const model = await amn.open(url, options);
    assert.deepEqual(model.info.tensors.map((x) => [x.name, x.shape]), [['token_embd.weight', [65536, 4096]]]);
    await model.close();
  }
  assert.deepEqual(stalled.map(([range]) => range), ['bytes=0-1048575', 'bytes=0-1048575'], 'one request per open');
});
