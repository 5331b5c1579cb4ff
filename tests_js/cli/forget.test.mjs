// `amn forget` as a process, native and Node: every tensor byte-identical with what the
// producers' own code wrote (fixtures/lethe/*/README.md), both CLIs printing the same
// bytes, the output read back by amn, and misuse refused as usage errors. A sharded input
// gives a sharded folder (the input's boundaries, the index, config.json); --max-shard-size
// keeps a weight's companions in its shard; --split-max-size / --split-max-tensors write
// gguf-split's files (convert and forget --to gguf).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync, existsSync, mkdirSync, copyFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from '../support/helpers.js';
import { ggufForgetInput } from '../support/gguf_input.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/dist/amn.cjs');
const ARM_AMN = join(root, 'build/aarch64/amn');  // NEON kernels, under qemu (make aarch64)
const fx = (p) => join(root, 'fixtures', p);

// cli: 'native' (x86-64), 'node' (WASM) or 'aarch64' (qemu).
function run(cli, args) {
  const r = cli === 'native' ? spawnSync(AMN, args, { encoding: 'utf8' })
    : cli === 'aarch64' ? spawnSync('qemu-aarch64', [ARM_AMN, ...args], { encoding: 'utf8' })
      : spawnSync(process.execPath, [NODE_AMN, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// Tensor bytes by name, through plain JSON.parse of the header (an independent reader).
function tensorsOf(path) {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    out[name] = { dtype: t.dtype, shape: t.shape, bytes: buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]) };
  }
  return out;
}

// Runs forget with `args` on both CLIs into one file each; checks that every expected
// tensor whose name starts with one of `prefixes` is byte-identical, and that both CLIs
// wrote the same file and printed the same lines.
function forgetMatches(input, expected, args, prefixes) {
  const dir = scratchDir('amn-forget-');
  const outs = {};
  for (const cli of ['native', 'node']) {
    const out = join(dir, `${cli}.safetensors`);
    const r = run(cli, ['forget', fx(input), ...args, '-o', out]);
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    outs[cli] = { path: out, text: r.out.replaceAll(out, 'OUT'), err: r.err };
  }
  assert.equal(outs.node.text, outs.native.text);
  assert.equal(outs.node.err, outs.native.err);
  assert.deepEqual(readFileSync(outs.node.path), readFileSync(outs.native.path));
  const got = tensorsOf(outs.native.path);
  const want = tensorsOf(fx(expected));
  let compared = 0;
  for (const [name, t] of Object.entries(want)) {
    if (!prefixes.some((p) => name.startsWith(p))) continue;
    assert.ok(got[name], `missing ${name}`);
    assert.equal(got[name].dtype, t.dtype, name);
    assert.deepEqual(got[name].shape, t.shape, name);
    assert.ok(got[name].bytes.equals(t.bytes), `${name}: bytes differ from the producer's`);
    compared++;
  }
  assert.ok(compared > 0, 'compared no tensor');
  return { out: outs.native.path, text: outs.native.text };
}

test('the binary exists (build it with `make native`)', () => {
  assert.ok(existsSync(AMN), `${AMN} is missing`);
});

test('nf4 with double quantization: bitsandbytes\' bytes, every weight', () => {
  const r = forgetMatches('lethe/bnb/nf4_dq.input.safetensors', 'lethe/bnb/nf4_dq.safetensors',
    ['--scheme', 'nf4', '--double-quant'], ['model.']);
  assert.match(r.text, /forgot 5 of 5 tensors as bitsandbytes nf4, blocksize 64, double quantization/);
  // amn reads what it wrote, as the quantized scheme it is.
  const back = run('native', ['inspect', '--json', r.out]);
  assert.equal(back.code, 0, back.err);
  const info = JSON.parse(back.out);
  assert.equal(info.logical.length, 5);
  assert.ok(info.logical.every((l) => l.scheme === 'bnb-nf4'));
});

test('nf4 and fp4 without double quantization: ties, zeros, subnormals, Inf and NaN blocks', () => {
  for (const type of ['nf4', 'fp4']) {
    forgetMatches('lethe/bnb/plain4.input.safetensors', 'lethe/bnb/plain4.safetensors',
      ['--scheme', type, '--only', `*.${type}.*`], [`model.layers.0.${type}.`]);
  }
});

test('blocksizes 32, 128 and 4096, nested and not', () => {
  const cases = [
    ['q_proj', ['--scheme', 'nf4', '--blocksize', '32']],
    ['k_proj', ['--scheme', 'fp4', '--blocksize', '128', '--double-quant']],
    ['up_proj', ['--scheme', 'nf4', '--blocksize', '4096', '--double-quant']],
    ['down_proj', ['--scheme', 'fp4', '--blocksize', '4096']],
    ['o_proj', ['--scheme', 'fp4', '--blocksize', '32', '--double-quant']],
  ];
  for (const [layer, args] of cases) {
    const group = ['up_proj', 'down_proj'].includes(layer) ? 'mlp' : 'self_attn';
    const prefix = `model.layers.1.${group}.${layer}.`;
    forgetMatches('lethe/bnb/blocksizes.input.safetensors', 'lethe/bnb/blocksizes.safetensors',
      [...args, '--only', `${prefix}*`], [prefix]);
  }
});

test('int8 (LLM.int8()): codes, SCB and weight_format', () => {
  forgetMatches('lethe/bnb/int8.input.safetensors', 'lethe/bnb/int8.safetensors', ['--scheme', 'int8'], ['model.']);
});

test('fp8-block: transformers\' FineGrainedFP8 bytes', () => {
  forgetMatches('lethe/fp8/block.input.safetensors', 'lethe/fp8/block.safetensors', ['--scheme', 'fp8-block'], ['model.']);
});

test('a folder with config.json: the producer\'s quantization_config, transformers\' choice of layers', () => {
  const dir = scratchDir('amn-forget-');
  const texts = {};
  for (const cli of ['native', 'node']) {
    const out = join(dir, `${cli}-out`);
    const r = run(cli, ['forget', fx('models/tiny-mlp'), '--scheme', 'nf4', '-o', out]);
    assert.equal(r.code, 0, r.err);
    texts[cli] = r.out.replaceAll(out, 'OUT');
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    assert.equal(config.quantization_config.quant_method, 'bitsandbytes');
    assert.equal(config.quantization_config.bnb_4bit_quant_type, 'nf4');
    assert.equal(config.model_type, 'tiny-mlp');
    const t = tensorsOf(join(out, 'model.safetensors'));
    assert.equal(t['model.layers.0.fc1.weight'].dtype, 'U8');         // a Linear weight: quantized
    assert.equal(t['model.embed_tokens.weight'].dtype, 'F32');        // an embedding: kept
    assert.equal(t['model.layers.0.norm.weight'].dtype, 'F32');       // 1-D: kept
  }
  assert.equal(texts.node, texts.native);
  assert.match(texts.native, /kept 2 as stored \(an embedding/);
});

test('--json: the Lethe distance per tensor and for the model, the same from both CLIs', () => {
  const dir = scratchDir('amn-forget-');
  const docs = {};
  for (const cli of ['native', 'node']) {
    const r = run(cli, ['forget', fx('lethe/bnb/int8.input.safetensors'), '--scheme', 'int8', '--json', '-o', join(dir, `${cli}.safetensors`)]);
    assert.equal(r.code, 0, r.err);
    docs[cli] = r.out;
  }
  assert.equal(docs.node, docs.native);
  const doc = JSON.parse(docs.native);
  assert.equal(doc.tensors.length, 3);
  for (const t of doc.tensors) {
    assert.equal(t.quantized, true);
    assert.ok(t.bits_after < t.bits_before);
    assert.ok(t.cosine > 0.99 && t.cosine <= 1, `${t.name} cosine ${t.cosine}`);
    assert.ok(t.rmse > 0 && t.max_abs_error >= t.mae);
  }
  assert.equal(doc.model.quantized, 3);
  assert.equal(doc.model.bytes_saved, doc.model.bytes_before - doc.model.bytes_after);
});

test('misuse is a usage error (exit 2, one line); a quantized input is refused', () => {
  const input = fx('lethe/bnb/int8.input.safetensors');
  for (const args of [
    ['--scheme', 'q9'],                         // unknown scheme
    ['--scheme', 'nf4', '--blocksize', '48'],   // not a power of two
    ['--scheme', 'nf4', '--blocksize', '8192'], // too large
    ['--scheme', 'int8', '--blocksize', '64'],  // int8 has none
    ['--scheme', 'nf4', '--torch-threads', '2'], // only with --double-quant
    ['--scheme', 'nf4', '--double-quant', '--torch-threads', '0'],
    [],                                          // no scheme
  ]) {
    const errs = [];
    for (const cli of ['native', 'node']) {
      const r = run(cli, ['forget', input, ...args, '-o', '/nonexistent/x.safetensors']);
      assert.equal(r.code, 2, `${cli} ${args.join(' ')}: ${r.err}`);
      assert.match(r.err, /^amn: usage error: /);
      errs.push(r.err);
    }
    assert.equal(errs[1], errs[0], args.join(' '));
  }
  const q = run('native', ['forget', fx('quantized/bnb/nf4.safetensors'), '--scheme', 'nf4', '-o', '/nonexistent/x.safetensors']);
  assert.equal(q.code, 1);
  assert.match(q.err, /already quantized/);
});

test('fp8-channel and fp8-tensor: llm-compressor\'s model_free_ptq bytes (scales in the weight\'s dtype)', () => {
  for (const s of ['channel', 'tensor']) {
    forgetMatches('lethe/fp8_ct/input.safetensors', `lethe/fp8_ct/${s}.safetensors`, ['--scheme', `fp8-${s}`], ['model.']);
  }
  // config.json's group is named as model_free_ptq's validate_config names it: the preset
  // (FP8_DYNAMIC), or config_group_0 for a scheme that is no preset (weight-only per tensor).
  const dir = scratchDir('amn-forget-fp8ct-');
  const model = join(dir, 'm');
  mkdirSync(model);
  copyFileSync(fx('lethe/fp8_ct/input.safetensors'), join(model, 'model.safetensors'));
  writeFileSync(join(model, 'config.json'), '{"model_type": "llama"}');
  for (const [s, group, strategy] of [['channel', 'FP8_DYNAMIC', 'channel'], ['tensor', 'config_group_0', 'tensor']]) {
    const f = run('native', ['forget', model, '--scheme', `fp8-${s}`, '-o', join(dir, s), '-q']);
    assert.equal(f.code, 0, f.err);
    const q = JSON.parse(readFileSync(join(dir, s, 'config.json'), 'utf8')).quantization_config;
    assert.deepEqual(Object.keys(q.config_groups), [group]);
    assert.equal(q.config_groups[group].weights.strategy, strategy);
  }
});

test('nvfp4: llm-compressor\'s model_free_ptq bytes, one global scale for the fused q/k/v', () => {
  const r = forgetMatches('lethe/nvfp4/input.safetensors', 'lethe/nvfp4/nvfp4.safetensors', ['--scheme', 'nvfp4'], ['model.']);
  assert.match(r.text, /forgot 6 of 6 tensors as nvfp4/);
  const got = tensorsOf(r.out);
  const attn = 'model.layers.0.self_attn.';
  const g = (p) => got[`${attn}${p}.weight_global_scale`].bytes;
  assert.ok(g('q_proj').equals(g('k_proj')) && g('q_proj').equals(g('v_proj')), 'one global scale for q/k/v');
  assert.ok(!g('q_proj').equals(g('o_proj')));
  // amn reads what it wrote as NVFP4, and the folder's config.json is model_free_ptq's.
  const back = run('native', ['inspect', '--json', r.out]);
  assert.equal(back.code, 0, back.err);
  assert.ok(JSON.parse(back.out).logical.every((l) => l.scheme === 'nvfp4'));
  const dir = scratchDir('amn-forget-nvfp4-');
  const model = join(dir, 'm');
  mkdirSync(model);
  copyFileSync(fx('lethe/nvfp4/input.safetensors'), join(model, 'model.safetensors'));
  writeFileSync(join(model, 'config.json'), '{"model_type": "llama"}');
  const f = run('native', ['forget', model, '--scheme', 'nvfp4', '-o', join(dir, 'out'), '-q']);
  assert.equal(f.code, 0, f.err);
  const q = JSON.parse(readFileSync(join(dir, 'out', 'config.json'), 'utf8')).quantization_config;
  assert.equal(q.format, 'nvfp4-pack-quantized');
  assert.equal(q.config_groups.NVFP4A16.weights.strategy, 'tensor_group');
  assert.equal(q.config_groups.NVFP4A16.weights.scale_dtype, 'torch.float8_e4m3fn');
});

test('mxfp4: transformers\' quantize_to_mxfp4 bytes; by default only the gpt-oss experts ([E, in, out], transposed)', () => {
  const r = forgetMatches('lethe/mxfp4/input.safetensors', 'lethe/mxfp4/mxfp4.safetensors', ['--scheme', 'mxfp4'],
    ['model.layers.1.']);
  assert.match(r.text, /forgot 1 of 4 tensors as mxfp4/);
  assert.match(r.text, /kept 3 as stored \(transformers' Mxfp4 quantizes only the gpt-oss MoE experts/);
  // --only chooses 2-D weights too, in the nn.Linear orientation [out, in]: every tensor.
  forgetMatches('lethe/mxfp4/input.safetensors', 'lethe/mxfp4/mxfp4.safetensors', ['--scheme', 'mxfp4', '--only', '*'], ['model.']);
});

// A quantized fixture as a folder (the model and its config.json, as a user has it).
function referenceFolder(dir, family, variant) {
  const ref = join(dir, `${family}-${variant}`);
  mkdirSync(ref);
  copyFileSync(fx(`quantized/${family}/${variant}.safetensors`), join(ref, 'model.safetensors'));
  if (existsSync(fx(`quantized/${family}/${variant}.config.json`))) {
    copyFileSync(fx(`quantized/${family}/${variant}.config.json`), join(ref, 'config.json'));
  }
  return ref;
}

test('round trip: forget(remember(REF), --like REF --reuse-scales) gives REF\'s bytes, x86-64, WASM and aarch64', () => {
  const dir = scratchDir('amn-forget-like-');
  // [family, variant, what remember writes]: BF16 suffices for 4-bit (an exact -0.0 keeps
  // FP4's code 8; NVFP4's decompress is BF16); F32 for the others.
  for (const [family, variant, to] of [
    ['bnb', 'nf4', 'bf16'], ['bnb', 'fp4', 'bf16'], ['bnb', 'mixed4', 'f32'], ['bnb', 'int8', 'f32'],
    ['fp8', 'block_e4m3', 'f32'], ['fp8', 'channel_e4m3_ct', 'f32'], ['nvfp4', 'compressed_tensors', 'bf16'],
    ['mxfp4', 'gpt_oss', 'bf16'],
  ]) {
    const ref = referenceFolder(dir, family, variant);
    const back = join(dir, `${variant}-back.safetensors`);
    const r = run('native', ['remember', ref, '--to', to, '-o', back, '-q']);
    assert.equal(r.code, 0, r.err);
    for (const cli of ['native', 'node', 'aarch64']) {
      const again = join(dir, `${variant}-${cli}-again.safetensors`);
      const f = run(cli, ['forget', back, '--like', ref, '--reuse-scales', '-o', again, '-q']);
      assert.equal(f.code, 0, `${cli} ${variant}: ${f.err}`);
      const got = tensorsOf(again);
      const want = tensorsOf(join(ref, 'model.safetensors'));
      assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), variant);
      for (const [name, t] of Object.entries(want)) {
        assert.ok(got[name].bytes.equals(t.bytes), `${cli} ${variant} ${name}: REF's bytes`);
      }
    }
  }
});

// The producers' own edge cases (fixtures/lethe: zero, subnormal and non-finite scales, a
// double-quantized absmax resolved below zero, ties, ±0) round trip too: where values
// cannot tell codes apart, REF's code is the one that gives the value back.
test('round trip on the producers\' edge-case fixtures: REF\'s bytes, x86-64, WASM and aarch64', () => {
  assert.ok(existsSync(ARM_AMN), `${ARM_AMN} is missing (make aarch64)`);
  const dir = scratchDir('amn-forget-like-edges-');
  for (const ref of ['bnb/nf4_dq', 'bnb/plain4', 'bnb/blocksizes', 'bnb/int8', 'fp8/block', 'fp8_ct/channel', 'fp8_ct/channel_zp',
    'fp8_ct/tensor', 'mxfp4/mxfp4', 'nvfp4/nvfp4', 'mlx_fp/edge']) {
    const path = fx(`lethe/${ref}.safetensors`);
    const back = join(dir, `${ref.replace('/', '-')}-back.safetensors`);
    const r = run('native', ['remember', path, '--to', 'f32', '-o', back, '-q']);
    assert.equal(r.code, 0, r.err);
    const want = tensorsOf(path);
    for (const cli of ['native', 'node', 'aarch64']) {
      const again = join(dir, `${ref.replace('/', '-')}-${cli}.safetensors`);
      const f = run(cli, ['forget', back, '--like', path, '--reuse-scales', '-o', again, '-q']);
      assert.equal(f.code, 0, `${cli} ${ref}: ${f.err}`);
      const got = tensorsOf(again);
      for (const [name, t] of Object.entries(want)) assert.ok(got[name]?.bytes.equals(t.bytes), `${cli} ${ref} ${name}: REF's bytes`);
    }
  }
});

test('--like: REF\'s settings without its scales; misuse is a usage error', () => {
  const dir = scratchDir('amn-forget-like-');
  const ref = referenceFolder(dir, 'bnb', 'mixed4');
  const back = join(dir, 'back.safetensors');
  assert.equal(run('native', ['remember', ref, '--to', 'f32', '-o', back, '-q']).code, 0);
  const r = run('native', ['forget', back, '--like', ref, '--json', '-o', join(dir, 'like.safetensors')]);
  assert.equal(r.code, 0, r.err);
  const doc = JSON.parse(r.out);
  assert.match(doc.scheme, /bitsandbytes fp4, blocksize 128, double quantization x1/);
  assert.match(doc.scheme, /bitsandbytes nf4, blocksize 32 x1/);
  for (const [args, message] of [
    [['--reuse-scales', '--scheme', 'nf4'], /--reuse-scales needs --like/],
    [['--like', ref, '--blocksize', '64'], /--like takes the settings from the reference/],
    [['--like', ref, '--scheme', 'int8'], /disagrees with the reference's/],
  ]) {
    for (const cli of ['native', 'node']) {
      const u = run(cli, ['forget', back, ...args, '-o', join(dir, 'x.safetensors')]);
      assert.equal(u.code, 2, `${cli} ${args.join(' ')}: ${u.err}`);
      assert.match(u.err, message);
    }
  }
  // A REF whose weights the input does not have: the same usage error from both CLIs.
  const errs = ['native', 'node'].map((cli) => {
    const other = run(cli, ['forget', fx('lethe/bnb/int8.input.safetensors'), '--like', ref, '-o', join(dir, 'y.safetensors')]);
    assert.equal(other.code, 2, `${cli}: ${other.err}`);
    assert.match(other.err, /--like: the reference quantizes/);
    return other.err;
  });
  assert.equal(errs[1], errs[0]);
});

test('mlx: mx.quantize\'s own bytes (every bits and group size, through --like), the defaults and the options', () => {
  // The inputs fixtures/quantized/mlx was made from, drawn again (fixtures/lethe/mlx).
  forgetMatches('lethe/mlx/mixed_bf16.input.safetensors', 'quantized/mlx/mixed_bf16/model.safetensors',
    ['--like', fx('quantized/mlx/mixed_bf16/model.safetensors')], ['model.layers.']);
  const q = 'model.layers.0.self_attn.q_proj.', k = 'model.layers.0.self_attn.k_proj.';
  const plain = forgetMatches('lethe/mlx/f16.input.safetensors', 'quantized/mlx/f16/model.safetensors', ['--scheme', 'mlx'], [q]);
  assert.match(plain.text, /mlx-lm skips it: its last dimension 96 is not a multiple of 64/);
  forgetMatches('lethe/mlx/f16.input.safetensors', 'quantized/mlx/f16/model.safetensors',
    ['--scheme', 'mlx', '--bits', '6', '--group-size', '128'], [k]);
  // A folder: mlx-lm's "quantization", mirrored as "quantization_config"; embeddings too.
  const dir = scratchDir('amn-forget-mlx-');
  const out = join(dir, 'tiny');
  const r = run('native', ['forget', fx('models/tiny-mlp'), '--scheme', 'mlx', '--group-size', '32', '-o', out, '-q']);
  assert.equal(r.code, 0, r.err);
  const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.deepEqual(config.quantization, { bits: 4, group_size: 32, mode: 'affine' });
  assert.deepEqual(config.quantization_config, config.quantization);
  const t = tensorsOf(join(out, 'model.safetensors'));
  assert.equal(t['model.embed_tokens.weight'].dtype, 'U32');
  assert.equal(t['model.embed_tokens.scales'].dtype, 'F32');
  assert.equal(t['model.layers.0.norm.weight'].dtype, 'F32');
  for (const [args, message] of [
    [['--bits', '7'], /--bits 7: mlx takes 2, 3, 4, 5, 6 or 8/],
    [['--group-size', '48'], /--group-size 48: mlx takes 32, 64 or 128/],
    [['--bits', 'four'], /--bits must be a positive whole number/],
  ]) {
    for (const cli of ['native', 'node']) {
      const u = run(cli, ['forget', fx('models/tiny-mlp'), '--scheme', 'mlx', ...args, '-o', join(dir, 'x')]);
      assert.equal(u.code, 2, `${cli} ${args.join(' ')}: ${u.err}`);
      assert.match(u.err, message);
    }
  }
  const nf4 = run('node', ['forget', fx('models/tiny-mlp'), '--scheme', 'nf4', '--bits', '4', '-o', join(dir, 'x')]);
  assert.equal(nf4.code, 2);
  assert.match(nf4.err, /--bits: only mlx takes it, not nf4/);
});

test('a single-file forget output keeps its quantization config in its metadata, so it reads back without a config.json', () => {
  // MLX 4-bit group 64 packs like 2-bit group 128 and 8-bit group 32: without the config
  // the shapes cannot say which (remember refused this file before the metadata held it).
  const dir = scratchDir('amn-forget-meta-');
  const q = 'model.layers.0.self_attn.q_proj.weight';
  const want = join(dir, 'want.safetensors');
  assert.equal(run('native', ['remember', fx('quantized/mlx/f16/model.safetensors'), '-o', want, '-q']).code, 0);
  for (const cli of ['native', 'node']) {
    const out = join(dir, `${cli}.safetensors`), back = join(dir, `${cli}-back.safetensors`);
    assert.equal(run(cli, ['forget', fx('lethe/mlx/f16.input.safetensors'), '--scheme', 'mlx', '-o', out, '-q']).code, 0);
    const buf = readFileSync(out);
    const meta = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString('utf8')).__metadata__;
    assert.deepEqual(JSON.parse(meta.quantization_config), { group_size: 64, bits: 4, mode: 'affine' });
    const r = run(cli, ['remember', out, '-o', back, '-q']);
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    assert.ok(tensorsOf(back)[q].bytes.equals(tensorsOf(want)[q].bytes), `${cli}: ${q} remembered as MLX's own file is`);
  }
});

test('mlx round trip: forget(remember(REF), --like REF --reuse-scales) gives REF\'s bytes (x86-64, WASM, aarch64)', () => {
  const dir = scratchDir('amn-forget-mlx-');
  // F16 and BF16 scales, every layer: in the 8-bit layer with BF16 scales mx.dequantize's
  // BF16 rounding of code * scale gives several codes one value, and REF's is kept.
  for (const variant of ['f16', 'mixed_bf16']) {
    const ref = fx(`quantized/mlx/${variant}/model.safetensors`);
    const back = join(dir, `${variant}-back.safetensors`);
    assert.equal(run('native', ['remember', ref, '--to', 'f32', '-o', back, '-q']).code, 0);
    const outs = ['native', 'node', 'aarch64'].map((cli) => {
      const again = join(dir, `${variant}-${cli}.safetensors`);
      const f = run(cli, ['forget', back, '--like', ref, '--reuse-scales', '-o', again, '-q']);
      assert.equal(f.code, 0, `${cli} ${variant}: ${f.err}`);
      return again;
    });
    for (const o of outs.slice(1)) assert.deepEqual(readFileSync(o), readFileSync(outs[0]));
    const got = tensorsOf(outs[0]);
    for (const [name, t] of Object.entries(tensorsOf(ref))) {
      assert.ok(got[name].bytes.equals(t.bytes), `${variant} ${name}: REF's bytes`);
    }
  }
});

test('mlx --mode mxfp4 / nvfp4 / mxfp8: mx.quantize\'s own bytes, mlx-lm\'s config, the refused settings', () => {
  // The inputs fixtures/quantized/mlx/modes_bf16 was made from, drawn again (fixtures/lethe/mlx_fp).
  const input = 'lethe/mlx_fp/modes_bf16.input.safetensors', made = 'quantized/mlx/modes_bf16/model.safetensors';
  const l0 = 'model.layers.0.', l1 = 'model.layers.1.self_attn.';
  forgetMatches(input, made, ['--scheme', 'mlx', '--mode', 'mxfp4'], [`${l0}self_attn.q_proj.`, `${l0}mlp.switch_mlp.gate_proj.`]);
  forgetMatches(input, made, ['--scheme', 'mlx', '--mode', 'nvfp4', '--bits', '4', '--group-size', '16'], [`${l0}self_attn.k_proj.`]);
  forgetMatches(input, made, ['--scheme', 'mlx', '--mode', 'mxfp8'], [`${l0}self_attn.v_proj.`, `${l0}mlp.switch_mlp.up_proj.`, `${l1}v_proj.`]);
  // Every layer MLX did not edit afterwards, each in its own mode (and affine), through --like.
  forgetMatches(input, made, ['--like', fx(made)], [l0, `${l1}v_proj.`]);
  const dir = scratchDir('amn-forget-mlx-fp-');
  const out = join(dir, 'tiny');
  const r = run('native', ['forget', fx('models/tiny-mlp'), '--scheme', 'mlx', '--mode', 'mxfp8', '-o', out, '-q']);
  assert.equal(r.code, 0, r.err);
  const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
  assert.deepEqual(config.quantization, { group_size: 32, bits: 8, mode: 'mxfp8' });
  assert.deepEqual(config.quantization_config, config.quantization);
  const t = tensorsOf(join(out, 'model.safetensors'));
  assert.equal(t['model.embed_tokens.scales'].dtype, 'U8');
  assert.equal(t['model.embed_tokens.biases'], undefined);
  for (const [args, message] of [
    [['--scheme', 'mlx', '--mode', 'mxfp4', '--bits', '8'], /--bits 8: mlx mode mxfp4 takes 4 only/],
    [['--scheme', 'mlx', '--mode', 'nvfp4', '--group-size', '32'], /--group-size 32: mlx mode nvfp4 takes 16 only/],
    [['--scheme', 'mlx', '--mode', 'mxfp5'], /--mode/],
    [['--scheme', 'nf4', '--mode', 'mxfp4'], /--mode: only mlx takes it, not nf4/],
  ]) {
    const errs = ['native', 'node'].map((cli) => {
      const u = run(cli, ['forget', fx('models/tiny-mlp'), ...args, '-o', join(dir, 'x')]);
      assert.equal(u.code, 2, `${cli} ${args.join(' ')}: ${u.err}`);
      assert.match(u.err, message);
      return u.err;
    });
    assert.equal(errs[1], errs[0]);
  }
});

test('mlx modes round trip: forget(remember(REF), --like REF --reuse-scales) gives REF\'s bytes (x86-64, WASM, aarch64)', () => {
  // modes_bf16: mxfp4, nvfp4, mxfp8 and 4-bit affine layers, E2M1 -0.0 codes in layer 1;
  // remembered to F32 or BF16 (every product is exact in both).
  const dir = scratchDir('amn-forget-mlx-fp-');
  const ref = fx('quantized/mlx/modes_bf16/model.safetensors');
  for (const to of ['f32', 'bf16']) {
    const back = join(dir, `back-${to}.safetensors`);
    assert.equal(run('native', ['remember', ref, '--to', to, '-o', back, '-q']).code, 0);
    const outs = ['native', 'node', 'aarch64'].map((cli) => {
      const again = join(dir, `${to}-${cli}.safetensors`);
      const f = run(cli, ['forget', back, '--like', ref, '--reuse-scales', '-o', again, '-q']);
      assert.equal(f.code, 0, `${cli} ${to}: ${f.err}`);
      return again;
    });
    for (const o of outs.slice(1)) assert.deepEqual(readFileSync(o), readFileSync(outs[0]));
    const got = tensorsOf(outs[0]);
    for (const [name, t] of Object.entries(tensorsOf(ref))) {
      assert.ok(got[name].bytes.equals(t.bytes), `${to} ${name}: REF's bytes`);
    }
  }
});

const SHARDED = join(root, 'fixtures/models/tiny-sharded');
const INDEX = 'model.safetensors.index.json';

// "<w>.weight" for a weight's companions (absmax, quant_map, nested_*, quant_state), else the name.
const weightOf = (name) => (name.includes('.weight.') ? name.slice(0, name.indexOf('.weight.') + 7) : name);

test('forget of a sharded model: a folder sharded like the input, its index and config.json', () => {
  const dir = scratchDir('amn-forget-shards-');
  const single = join(dir, 'one.safetensors');
  assert.equal(run('native', ['forget', SHARDED, '--scheme', 'nf4', '-o', single, '-q']).code, 0);
  const want = new Map(Object.entries(tensorsOf(single)).map(([k, v]) => [k, v.bytes]));
  const input = JSON.parse(readFileSync(join(SHARDED, INDEX), 'utf8')).weight_map;
  const lines = {};
  for (const cli of ['native', 'node']) {
    const out = join(dir, `${cli}-nf4`);
    const r = run(cli, ['forget', SHARDED, '--scheme', 'nf4', '-o', out]);
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    lines[cli] = r.out.replaceAll(out, 'OUT');
    assert.deepEqual(readdirSync(out).sort(), ['config.json', 'model-00001-of-00003.safetensors',
      'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors', INDEX]);
    const { weight_map: map } = JSON.parse(readFileSync(join(out, INDEX), 'utf8'));
    const got = new Map();
    for (const file of new Set(Object.values(map))) {
      for (const [name, { bytes }] of Object.entries(tensorsOf(join(out, file)))) {
        got.set(name, bytes);
        assert.equal(map[name], file, `${name}: the index says where it is`);
        // Each weight's shard is the input's, its companions beside it.
        assert.equal(file, input[weightOf(name)], `${name}: in its input shard`);
      }
    }
    assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
    for (const [name, bytes] of want) assert.ok(got.get(name).equals(bytes), `${cli} ${name}: the one-file output's bytes`);
    assert.ok(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).quantization_config);
  }
  assert.equal(lines.node, lines.native);
  assert.match(lines.native, /^wrote OUT\/ \(3 shards, \d+ tensors, /);
});

test('forget --max-shard-size: shards by size, a weight and its companions in one shard', () => {
  const dir = scratchDir('amn-forget-shards-');
  const outs = {};
  for (const cli of ['native', 'node']) {
    const out = join(dir, `${cli}-nf4`);
    const r = run(cli, ['forget', SHARDED, '--scheme', 'nf4', '--double-quant', '--max-shard-size', '4KB', '-o', out, '-q']);
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    outs[cli] = out;
  }
  const files = readdirSync(outs.native).sort();
  assert.deepEqual(readdirSync(outs.node).sort(), files);
  for (const f of files) assert.ok(readFileSync(join(outs.node, f)).equals(readFileSync(join(outs.native, f))), f);
  const { weight_map: map } = JSON.parse(readFileSync(join(outs.native, INDEX), 'utf8'));
  const shards = new Set(Object.values(map));
  assert.ok(shards.size > 3, `${shards.size} shards of at most 4 KB`);
  const quantized = Object.keys(map).filter((n) => n.endsWith('.weight.absmax')).map(weightOf);
  assert.ok(quantized.length > 0);
  for (const name of Object.keys(map)) assert.equal(map[name], map[weightOf(name)], `${name} beside its weight`);
  // With --shards 1 the folder holds one model.safetensors.
  const one = join(dir, 'one');
  assert.equal(run('native', ['forget', SHARDED, '--scheme', 'nf4', '--shards', '1', '-o', one, '-q']).code, 0);
  assert.deepEqual(readdirSync(one).sort(), ['config.json', 'model.safetensors']);
});

// A GGUF file's tensor names, and its KVs that gguf-split adds.
function ggufSummary(path) {
  const r = spawnSync(AMN, ['inspect', '--json', path], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('GGUF splits: convert and forget --to gguf write gguf-split\'s files, the same from both CLIs', () => {
  const dir = scratchDir('amn-gguf-split-');
  const input = join(dir, 'model.safetensors');
  writeFileSync(input, ggufForgetInput());
  const verbs = {
    convert: ['convert', input, '--to', 'gguf', '--split-max-tensors', '1'],
    forget: ['forget', input, '--to', 'gguf', '--scheme', 'q8_0', '--pure', '--split-max-size', '1M'],
  };
  for (const [verb, args] of Object.entries(verbs)) {
    const whole = join(dir, `${verb}.gguf`);
    const plain = args.filter((a, i) => !a.startsWith('--split') && !args[i - 1]?.startsWith('--split'));
    assert.equal(run('native', [...plain, '-o', whole, '-q']).code, 0);
    const texts = {};
    for (const cli of ['native', 'node']) {
      const out = join(dir, `${cli}-${verb}`);
      const r = run(cli, [...args, '-o', out]);
      assert.equal(r.code, 0, `${cli} ${verb}: ${r.err}`);
      texts[cli] = r.out.replaceAll(out, 'OUT');
    }
    assert.equal(texts.node, texts.native);
    const files = readdirSync(join(dir, `native-${verb}`)).sort();
    assert.deepEqual(readdirSync(join(dir, `node-${verb}`)).sort(), files.map((f) => f.replace('native-', 'node-')));
    const n = files.length;
    assert.deepEqual(files, files.map((_, k) => `native-${verb}-${String(k + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.gguf`));
    if (verb === 'convert') assert.equal(n, 2, 'one tensor a file');
    // Opened from its first file, the split set is the unsplit file's model, tensor for tensor.
    const split = ggufSummary(join(dir, `native-${verb}`, files[0]));
    const one = ggufSummary(whole);
    assert.equal(split.sharded, n > 1);
    assert.deepEqual(split.tensors.map((t) => [t.name, t.dtype, t.shape]), one.tensors.map((t) => [t.name, t.dtype, t.shape]));
    const hash = (p) => JSON.parse(spawnSync(AMN, ['hash', '--json', p], { encoding: 'utf8' }).stdout).model.sha256;
    assert.equal(hash(join(dir, `native-${verb}`, files[0])), hash(whole), `${verb}: the same tensor bytes`);
  }
});

test('GGUF splits: misuse is refused the same way by both CLIs', () => {
  const dir = scratchDir('amn-gguf-split-');
  const input = join(dir, 'model.safetensors');
  writeFileSync(input, ggufForgetInput());
  const cases = [
    [['convert', input, '--to', 'safetensors', '--split-max-size', '1G'], '--split-max-size splits GGUF output'],
    [['convert', input, '--to', 'gguf', '--split-max-size', '1G', '--split-max-tensors', '2'], 'contradict'],
    [['convert', input, '--to', 'gguf', '--split-max-size', '1G', '-o', join(dir, 'x.gguf')], 'names a file'],
    [['convert', input, '--to', 'gguf', '--max-shard-size', '1GB'], '--split-max-size or --split-max-tensors'],
    [['forget', input, '--scheme', 'nf4', '--max-shard-size', '1GB', '-o', join(dir, 'y.safetensors')], 'names a file'],
  ];
  for (const [args, says] of cases) {
    const a = run('native', args);
    const b = run('node', args);
    assert.notEqual(a.code, 0, args.join(' '));
    assert.ok(a.err.includes(says), `${args.join(' ')}: ${a.err}`);
    assert.equal(b.err, a.err, `${args.join(' ')}: the Node CLI says otherwise`);
    assert.equal(b.code, a.code);
  }
  assert.deepEqual(readdirSync(dir), ['model.safetensors'], 'nothing written');
});
