// `amn forget` end to end on aarch64 (the NEON build, run under qemu) writes the same
// bytes as x86-64: every scheme the core lists (forgetSchemes(), so a new one is covered
// without editing this file), and every ggml type for --to gguf. The kernel tests run
// under qemu too (test-aarch64); this checks the whole path a user runs — planning, the
// producer's choice of tensors, headers, config.json — on the CPU that writes differently
// when an encoder lets the compiler or the CPU decide (a default NaN's sign, FMA).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forgetSchemes } from '../../npm/node.js';
import { scratchDir, loadPackage } from '../support/helpers.js';
import { ggufTensors } from '../support/gguf_input.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const X86 = join(root, 'build/native/amn');
const ARM = join(root, 'build/aarch64/amn');
const fx = (p) => join(root, 'fixtures', p);

// One input per safetensors scheme: the producer fixtures' inputs (edge values: ties,
// zeros, subnormals, ±Inf/NaN where the producer is definite).
const INPUTS = {
  nf4: [['lethe/bnb/nf4_dq.input.safetensors', ['--double-quant']], ['lethe/bnb/blocksizes.input.safetensors', ['--blocksize', '32']]],
  fp4: [['lethe/bnb/plain4.input.safetensors', []]],
  int8: [['lethe/bnb/int8.input.safetensors', []]],
  'fp8-block': [['lethe/fp8/block.input.safetensors', []]],
  'fp8-channel': [['lethe/fp8_ct/input.safetensors', []]],
  'fp8-tensor': [['lethe/fp8_ct/input.safetensors', []]],
  mxfp4: [['lethe/mxfp4/input.safetensors', ['--only', '*']]],
  nvfp4: [['lethe/nvfp4/input.safetensors', []]],
  mlx: [['lethe/mlx/edge.input.safetensors', []], ['lethe/mlx/f16.input.safetensors', ['--bits', '3', '--group-size', '32']],
    ...['mxfp4', 'nvfp4', 'mxfp8'].map((mode) => ['lethe/mlx_fp/edge.input.safetensors', ['--only', '*', '--mode', mode]])],
};

const GGUF_INPUT = fx('gguf_ftype/tiny_llama_f16.gguf');
// An importance matrix for every type (the IQ1/IQ2 types refuse to run without one), and
// token_embd / output at Q8_0 so --pure gives every other weight the one type.
const GGUF_ARGS = ['--pure', '--imatrix', fx('gguf_ftype/tiny.imatrix.gguf'), '--token-embedding-type', 'Q8_0',
  '--output-tensor-type', 'Q8_0'];

// Every file under `path` (a file, or a folder such as forget's <stem>-<scheme>/), by name.
function filesOf(path) {
  if (!statSync(path).isDirectory()) return { '.': readFileSync(path) };
  return Object.fromEntries(readdirSync(path).sort().map((n) => [n, readFileSync(join(path, n))]));
}

function forgetBoth(input, args, dir, tag) {
  const outs = [];
  for (const [cpu, cmd] of [['x86', [X86]], ['arm', ['qemu-aarch64', ARM]]]) {
    const out = join(dir, `${tag}-${cpu}`);
    const r = spawnSync(cmd[0], [...cmd.slice(1), 'forget', input, ...args, '-o', out, '-q'], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${cpu} forget ${tag}: ${r.stderr}`);
    outs.push(filesOf(out));
  }
  const [x86, arm] = outs;
  assert.deepEqual(Object.keys(arm), Object.keys(x86), `${tag}: different files`);
  for (const name of Object.keys(x86)) {
    assert.ok(arm[name].equals(x86[name]), `${tag} ${name}: aarch64 and x86-64 bytes differ`);
  }
}

test('forget under qemu aarch64 writes x86-64\'s bytes, for every scheme and ggml type', async () => {
  assert.ok(existsSync(ARM), `${ARM} is missing (make aarch64)`);
  const schemes = await forgetSchemes();
  const dir = scratchDir('amn-forget-arm-');
  let ran = 0;
  for (const s of schemes.filter((x) => x.available)) {
    if (s.to === 'gguf') {
      forgetBoth(GGUF_INPUT, ['--to', 'gguf', '--scheme', s.name, ...GGUF_ARGS], dir, `gguf-${s.name}.gguf`);
      ran += 1;
      continue;
    }
    const inputs = INPUTS[s.name];
    assert.ok(inputs, `no aarch64 input for the scheme '${s.name}': add one to INPUTS`);
    inputs.forEach(([input, args], i) => {
      forgetBoth(fx(input), ['--scheme', s.name, ...args], dir, `${s.name}-${i}`);
      ran += 1;
    });
  }
  // Every safetensors scheme above, and at least the 27 ggml types the help lists.
  assert.ok(ran >= Object.keys(INPUTS).length + 27, `only ${ran} runs`);
});

test('forget --to gguf --like G --reuse-scales under qemu aarch64: G\'s blocks again, x86-64\'s bytes', async () => {
  assert.ok(existsSync(ARM), `${ARM} is missing (make aarch64)`);
  const amn = await loadPackage();
  const dir = scratchDir('amn-forget-arm-like-');
  // llama-quantize's files: K-quants with Q6_K / Q5_0 / Q8_0 bumps, IQ4_XS, IQ2_XS (the
  // grid search). Every other type's blocks: tests_native/test_forget_gguf_like.cpp, which
  // test-aarch64 runs under qemu too.
  for (const name of ['tiny-Q4_K_M.gguf', 'tiny-Q3_K_M.gguf', 'tiny-IQ4_XS.gguf', 'tiny-imatrix-IQ2_XS.gguf']) {
    const g = fx(`gguf_ftype/${name}`);
    const back = join(dir, `${name}.safetensors`);
    const r = spawnSync(X86, ['remember', g, '--to', 'f32', '-o', back, '-q'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    forgetBoth(back, ['--to', 'gguf', '--like', g, '--reuse-scales'], dir, `like-${name}`);
    assert.deepEqual(await ggufTensors(amn, readFileSync(join(dir, `like-${name}-x86`))), await ggufTensors(amn, readFileSync(g)), name);
  }
});
