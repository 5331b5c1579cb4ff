// forget streams: on a model of more than 256 MiB, the native amn's peak RSS stays within
// 2 x the largest tensor + 64 MiB (issue 15), for a scheme with a whole-tensor pass
// (NF4 with double quantization) and a row-wise one (int8). Measured by GNU time (%M).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { openSync, writeSync, closeSync, statSync } from 'node:fs';
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
    const r = spawnSync(TIME, ['-f', '%M', AMN, 'forget', model, ...args, '-o', out, '-q', '--no-sync'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const peakKiB = Number(r.stderr.trim().split('\n').at(-1));
    const bound = 2 * largest + 64 * 2 ** 20;
    assert.ok(peakKiB * 1024 <= bound, `${args[1]}: peak RSS ${peakKiB} KiB > ${bound / 1024} KiB`);
  }
});
