// --threads: the native amn runs pieces on a pool of threads, and the output is the same
// file for any count (convert/execute.cpp writes pieces in order). A model of several
// weights, each cut into more than one piece (pieces cover at most 4 Mi elements of a
// weight), so that pieces of one weight and of the next run at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from '../support/helpers.js';
import { makeSafetensors } from '../support/safetensors.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');

// BF16 values from an LCG in [-0.1, 0.1).
function bf16Values(count, seed) {
  const out = new Uint16Array(count);
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  for (let i = 0; i < count; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    f32[0] = (seed / 4294967296 - 0.5) * 0.2;
    out[i] = u32[0] >>> 16;
  }
  return new Uint8Array(out.buffer);
}

function model() {
  const tensors = [
    ['blk.0.attn_norm.weight', [4096]],
    ['blk.0.ffn_up.weight', [2560, 4096]],   // 10 Mi elements: 3 pieces
    ['blk.0.attn_v.weight', [1024, 4096]],
    ['blk.0.ffn_down.weight', [4096, 2304]],  // 9 Mi elements: 3 pieces
    ['blk.1.attn_k.weight', [256, 4096]],
  ];
  return makeSafetensors(tensors.map(([name, shape], i) => ({
    name, dtype: 'BF16', shape, data: bf16Values(shape.reduce((a, b) => a * b, 1), 1000 + i),
  })));
}

function amn(args) {
  const r = spawnSync(AMN, [...args, '-q', '--no-sync'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('--threads 1 and --threads 3 write the same bytes (forget to GGUF and safetensors, convert)', { timeout: 300_000 }, () => {
  const dir = scratchDir('amn-threads-');
  const input = join(dir, 'model.safetensors');
  writeFileSync(input, model());
  const runs = [
    ['forget', '--to', 'gguf', '--scheme', 'Q4_K', '--pure', '--gguf-kv', 'general.architecture=llama'],
    ['forget', '--to', 'gguf', '--scheme', 'Q6_K', '--pure', '--gguf-kv', 'general.architecture=llama'],
    ['forget', '--scheme', 'nf4', '--double-quant'],
    ['forget', '--scheme', 'int8'],
    ['convert', '--to', 'gguf', '--dtype', 'f16', '--gguf-kv', 'general.architecture=llama'],
  ];
  for (const args of runs) {
    const [verb, ...rest] = args;
    const ext = args.includes('gguf') ? 'gguf' : 'safetensors';
    const outs = [1, 3].map((n) => {
      const out = join(dir, `t${n}.${ext}`);
      const json = verb === 'forget' ? amn([verb, input, ...rest, '--json', '--threads', String(n), '-o', out, '--force']) : '';
      if (verb !== 'forget') amn([verb, input, ...rest, '--threads', String(n), '-o', out, '--force']);
      return { bytes: readFileSync(out), json };
    });
    assert.ok(outs[0].bytes.length > 1 << 20, args.join(' '));
    assert.ok(outs[0].bytes.equals(outs[1].bytes), `${args.join(' ')}: --threads 3 wrote other bytes than --threads 1`);
    assert.equal(outs[1].json, outs[0].json, `${args.join(' ')}: the lethe report differs`);
  }
});

test('--threads must be a positive whole number, in both CLIs', () => {
  for (const n of ['0', '-2', 'x']) {
    const args = ['convert', 'x.safetensors', '--to', 'gguf', '--threads', n];
    const native = spawnSync(AMN, args, { encoding: 'utf8' });
    const node = spawnSync(process.execPath, [join(root, 'npm/dist/amn.cjs'), ...args], { encoding: 'utf8' });
    assert.equal(native.status, 1);
    assert.match(native.stderr, /--threads must be a positive whole number/);
    assert.equal(node.status, native.status);
    assert.equal(node.stderr, native.stderr);
  }
});
