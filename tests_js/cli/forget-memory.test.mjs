// forget streams: on a model of more than 256 MiB, the native amn's peak RSS stays within
// 2 x the largest tensor + 64 MiB (issue 15), for a scheme with a whole-tensor pass
// (NF4 with double quantization) and a row-wise one (int8), and for GGUF output (issue
// 16: convert --to gguf, forget --to gguf). Measured by GNU time (%M).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { openSync, writeSync, closeSync, readFileSync, statSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from '../support/helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');
const TIME = '/usr/bin/time';  // Debian's `time` package (tools/bootstrap.sh)

// A BF16 safetensors file: tensors of the given shapes, values from an LCG in [-0.1, 0.1).
function writeModel(path, tensors) {
  const header = {};
  let at = 0;
  for (const [name, shape] of tensors) {
    const n = shape.reduce((a, b) => a * b, 1) * 2;
    header[name] = { dtype: 'BF16', shape, data_offsets: [at, at + n] };
    at += n;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const fd = openSync(path, 'w');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeSync(fd, len);
  writeSync(fd, Buffer.from(json));
  let seed = 12345;
  const chunk = new Uint16Array(1 << 22);
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  for (let left = at / 2; left > 0;) {
    const n = Math.min(chunk.length, left);
    for (let i = 0; i < n; i++) {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      f32[0] = (seed / 4294967296 - 0.5) * 0.2;
      chunk[i] = u32[0] >>> 16;
    }
    writeSync(fd, new Uint8Array(chunk.buffer, 0, n * 2));
    left -= n;
  }
  closeSync(fd);
}

// Runs the native amn under GNU time; returns its peak RSS in bytes.
function peakRss(args) {
  const r = spawnSync(TIME, ['-f', '%M', AMN, ...args, '-q', '--no-sync'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stderr.trim().split('\n').at(-1)) * 1024;
}

function assertWithin(what, peak, largest) {
  const bound = 2 * largest + 64 * 2 ** 20;
  assert.ok(peak <= bound, `${what}: peak RSS ${peak / 1024} KiB > ${bound / 1024} KiB`);
}

test('forget\'s peak RSS: at most 2 x the largest tensor + 64 MiB on a 288 MiB model', { timeout: 600_000 }, () => {
  const dir = scratchDir('amn-forget-rss-');
  const model = join(dir, 'model.safetensors');
  const largest = 16384 * 8192 * 2;  // 256 MiB
  writeModel(model, [
    ['model.layers.0.mlp.up_proj.weight', [16384, 8192]],
    ['model.layers.0.mlp.down_proj.weight', [4096, 4096]],
  ]);
  assert.ok(statSync(model).size > 256 * 2 ** 20);
  for (const args of [['--scheme', 'nf4', '--double-quant'], ['--scheme', 'int8']]) {
    const out = join(dir, `${args[1]}.safetensors`);
    assertWithin(args[1], peakRss(['forget', model, ...args, '-o', out]), largest);
  }
});

// GGUF output (issue 16): the F16 GGUF is made by `amn convert --to gguf` (measured too),
// then quantized with a llama-quantize file type and with TQ1_0, the fewest bits per
// element without an importance matrix: pieces once cut by their output bytes alone held
// 79 M elements as F32 for TQ1_0 (905 MB here, past the bound; convert/plan_forget.cpp).
test('convert and forget --to gguf: peak RSS at most 2 x the largest tensor + 64 MiB', { timeout: 600_000 }, () => {
  const dir = scratchDir('amn-forget-gguf-rss-');
  const model = join(dir, 'model.safetensors');
  const largest = 16384 * 8192 * 2;  // 256 MiB, BF16 in the safetensors and F16 in the GGUF
  writeModel(model, [
    ['blk.0.ffn_up.weight', [16384, 8192]],
    ['blk.0.attn_v.weight', [4096, 4096]],
  ]);
  const f16 = join(dir, 'f16.gguf');
  const kvs = ['general.architecture=llama', 'llama.block_count:UINT32=1', 'llama.attention.head_count:UINT32=32'];
  assertWithin('convert --to gguf --dtype f16',
    peakRss(['convert', model, '--to', 'gguf', '--dtype', 'f16', ...kvs.flatMap((kv) => ['--gguf-kv', kv]), '-o', f16]),
    largest);
  for (const args of [['--scheme', 'Q4_K_M'], ['--scheme', 'TQ1_0', '--pure']]) {
    const out = join(dir, `${args[1]}.gguf`);
    assertWithin(`forget --to gguf ${args.join(' ')}`, peakRss(['forget', f16, '--to', 'gguf', ...args, '-o', out]), largest);
    assert.equal(readFileSync(out).subarray(0, 4).toString('latin1'), 'GGUF');
  }
});
