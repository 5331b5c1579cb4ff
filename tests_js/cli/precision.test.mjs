// Default precision (issue 18, item 6): `remember` without --to loses nothing. Stored
// tensors keep their dtype, quantized weights take their natural dtype (the producer's
// dequantizer's), --cast-all without --to casts the rest to that natural dtype. The
// default name: <stem>.safetensors where that cannot be an input (the input is not
// safetensors), else <stem>-<dtype> when every float output has one dtype, else
// <stem>-remembered. Both CLIs and the npm API's outputName agree.
//   node --test tests_js/cli/precision.test.mjs   (AMN_NATIVE=path/to/amn to test another build)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, FIXTURES, ROOT, loadPackage, scratchDir } from '../support/helpers.js';
import { makeSafetensors } from '../support/safetensors.js';

const AMN = process.env.AMN_NATIVE || join(ROOT, 'build', 'native', 'amn');
const CLIS = {
  native: (args) => spawnSync(AMN, args, { encoding: 'utf8' }),
  node: (args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' }),
};
const sha256 = (b) => createHash('sha256').update(b).digest('hex');
const fx = (p) => join(FIXTURES, p);
const amn = await loadPackage();

// An independent reader: plain JSON.parse of the header.
function tensorsOf(path) {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name !== '__metadata__') out[name] = { dtype: t.dtype, shape: t.shape, bytes: buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]) };
  }
  return out;
}

// Runs `remember input ...extra` with both CLIs, each in its own copy of the input's
// folder (`files`: [source, name in the folder]); checks they print "wrote <dir>/<name>"
// and write the same bytes. Returns the native output's tensors and its folder.
function rememberBoth(files, input, extra, name) {
  const outs = {};
  for (const [cli, run] of Object.entries(CLIS)) {
    const dir = scratchDir('amn-precision-');
    for (const [src, as] of files) copyFileSync(src, join(dir, as));
    const r = run(['remember', join(dir, input), ...extra]);
    assert.equal(r.status, 0, `${cli}: ${r.stderr}`);
    assert.equal(r.stdout.split(' (')[0], `wrote ${dir}/${name}`, cli);
    outs[cli] = { dir, bytes: readFileSync(join(dir, name)) };
  }
  assert.ok(outs.native.bytes.equals(outs.node.bytes), `${name}: native and Node differ`);
  return { tensors: tensorsOf(join(outs.native.dir, name)), dir: outs.native.dir };
}

async function outputName(path, options) {
  const model = await amn.open(path);
  try {
    return model.outputName({ verb: 'remember', ...options });
  } finally {
    await model.close();
  }
}

test('an F32 PyTorch checkpoint: <stem>.safetensors, F32, bit-identical to what torch.load gives', async () => {
  const want = JSON.parse(readFileSync(fx('torch/expected/nested.pt.json'), 'utf8')).tensors;
  assert.ok(want.length >= 4 && want.every((x) => x.dtype === 'F32'));
  const { tensors, dir } = rememberBoth([[fx('torch/valid/nested.pt'), 'model.pth']], 'model.pth', [], 'model.safetensors');
  assert.deepEqual(Object.keys(tensors).sort(), want.map((x) => x.name).sort());
  for (const x of want) {
    assert.equal(tensors[x.name].dtype, 'F32', x.name);
    assert.deepEqual(tensors[x.name].shape, x.shape, x.name);
    assert.equal(sha256(tensors[x.name].bytes), x.sha256, `${x.name}: not the checkpoint's values`);
  }
  assert.deepEqual(readdirSync(dir).sort(), ['model.pth', 'model.safetensors']);
  assert.equal(await outputName(join(dir, 'model.pth')), 'model.safetensors');
  // --to still casts and names the output by its dtype.
  const cast = rememberBoth([[fx('torch/valid/nested.pt'), 'model.pth']], 'model.pth', ['--to', 'bf16'], 'model-bf16.safetensors');
  assert.ok(Object.values(cast.tensors).every((t) => t.dtype === 'BF16'));
});

test('F16 stays F16: a NumPy array (<stem>.safetensors) and a safetensors file (<stem>-f16.safetensors)', async () => {
  const npy = JSON.parse(readFileSync(fx('numpy/expected.json'), 'utf8')).find((f) => f.file === 'valid/f2_le.npy');
  assert.ok(npy, 'fixtures/numpy/expected.json describes valid/f2_le.npy');
  const a = rememberBoth([[fx('numpy/valid/f2_le.npy'), 'f2_le.npy']], 'f2_le.npy', [], 'f2_le.safetensors');
  const [only] = Object.values(a.tensors);
  assert.equal(only.dtype, 'F16');
  assert.equal(sha256(only.bytes), npy.arrays[0].sha256, 'not what numpy.load gives');

  // Values F16 holds and BF16 does not (1/3, the largest normal, a subnormal).
  const src = scratchDir('amn-precision-src-');
  const f16 = new Uint8Array(new Uint16Array([0x3c00, 0xc000, 0x3555, 0x0001, 0x7bff, 0x8400]).buffer);
  const i64 = new Uint8Array(new BigInt64Array([7n, -1n]).buffer);
  writeFileSync(join(src, 'half.safetensors'), makeSafetensors([{ name: 'w', dtype: 'F16', shape: [2, 3], data: f16 },
    { name: 'ids', dtype: 'I64', shape: [2], data: i64 }], { format: 'pt' }));
  const b = rememberBoth([[join(src, 'half.safetensors'), 'half.safetensors']], 'half.safetensors', [], 'half-f16.safetensors');
  assert.equal(b.tensors.w.dtype, 'F16');
  assert.deepEqual([...b.tensors.w.bytes], [...f16]);
  assert.equal(b.tensors.ids.dtype, 'I64');
  assert.deepEqual([...b.tensors.ids.bytes], [...i64]);
  assert.equal(await outputName(join(src, 'half.safetensors')), 'half-f16.safetensors');
});

test('quantized weights take their natural dtype, the other tensors stay as stored', async () => {
  // bitsandbytes NF4 (natural BF16, the quant_state's dtype) with a BF16 norm: all BF16.
  const nf4 = rememberBoth([[fx('quantized/bnb/nf4.safetensors'), 'model.safetensors'], [fx('quantized/bnb/nf4.config.json'), 'config.json']],
    'model.safetensors', [], 'model-bf16.safetensors');
  const expected = tensorsOf(fx('quantized/bnb/nf4.expected.safetensors'));
  for (const [name, t] of Object.entries(expected)) {
    assert.equal(nf4.tensors[name].dtype, 'BF16', name);
    assert.ok(nf4.tensors[name].bytes.equals(t.bytes), `${name}: not bitsandbytes' own output`);
  }
  const norm = tensorsOf(fx('quantized/bnb/nf4.safetensors'))['model.norm.weight'];
  assert.equal(nf4.tensors['model.norm.weight'].dtype, 'BF16');
  assert.ok(nf4.tensors['model.norm.weight'].bytes.equals(norm.bytes), 'the norm as stored');
  assert.equal(await outputName(join(nf4.dir, 'model.safetensors')), 'model-bf16.safetensors');

  // GPTQ: F16, the producer's module output (its scales' dtype).
  const gptqDir = fx('quantized/gptq/w4_g128_sym_v1');
  const gptq = rememberBoth(['model.safetensors', 'config.json', 'quantize_config.json'].map((f) => [join(gptqDir, f), f]),
    'model.safetensors', [], 'model-f16.safetensors');
  const w = 'model.layers.0.self_attn.q_proj.weight';
  assert.equal(gptq.tensors[w].dtype, 'F16');
  assert.ok(gptq.tensors[w].bytes.equals(tensorsOf(join(gptqDir, 'expected.safetensors'))[w].bytes), 'not the producer\'s F16');
});

test('FP8 (natural F32) with a BF16 norm: -remembered, norm kept; --cast-all: -f32, the norm widened exactly', async () => {
  const files = [[fx('quantized/fp8/block_e4m3.safetensors'), 'model.safetensors'], [fx('quantized/fp8/block_e4m3.config.json'), 'config.json']];
  const stored = tensorsOf(fx('quantized/fp8/block_e4m3.safetensors'));
  const expected = tensorsOf(fx('quantized/fp8/block_e4m3.expected.safetensors'));
  const normName = 'model.layers.0.input_layernorm.weight';
  assert.equal(stored[normName].dtype, 'BF16');

  const kept = rememberBoth(files, 'model.safetensors', [], 'model-remembered.safetensors');
  assert.equal(kept.tensors[normName].dtype, 'BF16');
  assert.ok(kept.tensors[normName].bytes.equals(stored[normName].bytes), 'the norm as stored');
  for (const [name, t] of Object.entries(expected)) {
    assert.equal(kept.tensors[name].dtype, t.dtype, name);
    assert.equal(t.dtype, 'F32', name);
    assert.ok(kept.tensors[name].bytes.equals(t.bytes), `${name}: not the producer's F32`);
  }
  assert.equal(await outputName(join(kept.dir, 'model.safetensors')), 'model-remembered.safetensors');

  const all = rememberBoth(files, 'model.safetensors', ['--cast-all'], 'model-f32.safetensors');
  assert.equal(all.tensors[normName].dtype, 'F32');
  const bf16 = new Uint16Array(stored[normName].bytes.buffer.slice(stored[normName].bytes.byteOffset, stored[normName].bytes.byteOffset + stored[normName].bytes.length));
  const widened = new Uint8Array(new Uint32Array([...bf16].map((h) => h << 16 >>> 0)).buffer);
  assert.deepEqual([...all.tensors[normName].bytes], [...widened], 'BF16 widened to F32 exactly');
  for (const name of Object.keys(expected)) assert.ok(all.tensors[name].bytes.equals(kept.tensors[name].bytes), name);
  assert.equal(await outputName(join(all.dir, 'model.safetensors'), { castAll: true }), 'model-f32.safetensors');
});

test('--cast-all without --to when the natural dtypes differ: refused the same way by both CLIs, nothing written', () => {
  const errors = {};
  for (const [cli, run] of Object.entries(CLIS)) {
    const dir = scratchDir('amn-precision-');
    copyFileSync(fx('quantized/bnb/mixed4.safetensors'), join(dir, 'mixed4.safetensors'));
    const r = run(['remember', join(dir, 'mixed4.safetensors'), '--cast-all']);
    assert.equal(r.status, 1, cli);
    errors[cli] = r.stderr;
    assert.deepEqual(readdirSync(dir), ['mixed4.safetensors'], `${cli}: nothing written`);
    // Without --cast-all it converts: F32 (NF4 of F32) and F16 (FP4 of F16) side by side.
    const ok = run(['remember', join(dir, 'mixed4.safetensors'), '-q']);
    assert.equal(ok.status, 0, `${cli}: ${ok.stderr}`);
    const out = tensorsOf(join(dir, 'mixed4-remembered.safetensors'));
    assert.deepEqual(Object.values(out).map((t) => t.dtype).sort(), ['F16', 'F32']);
  }
  assert.equal(errors.native, 'amn: error [invalid_argument]: the quantized weights\' natural dtypes differ: '
    + 'F32 (model.layers.0.self_attn.o_proj.weight), F16 (model.layers.0.self_attn.v_proj.weight); '
    + 'casting the other tensors too needs a target dtype\n');
  assert.equal(errors.node, errors.native);
});

test('GGUF: block types dequantized to F32 (ggml\'s to_float), plain types as stored, <stem>.safetensors', async () => {
  const gguf = fx('gguf/valid/tensor_types.gguf');
  const out = rememberBoth([[gguf, 'tensor_types.gguf']], 'tensor_types.gguf', [], 'tensor_types.safetensors');
  const info = JSON.parse(CLIS.native(['inspect', gguf, '--json']).stdout);
  const f32 = scratchDir('amn-precision-');
  assert.equal(CLIS.native(['remember', gguf, '--to', 'f32', '-o', join(f32, 'f32.safetensors'), '-q']).status, 0);
  const asF32 = tensorsOf(join(f32, 'f32.safetensors'));
  let blocks = 0;
  for (const t of info.tensors) {
    if (/^(Q|IQ|TQ)/.test(t.dtype)) {
      blocks += 1;
      assert.equal(out.tensors[t.name].dtype, 'F32', t.name);
      assert.ok(out.tensors[t.name].bytes.equals(asF32[t.name].bytes), t.name);
    } else {
      assert.equal(out.tensors[t.name].dtype, t.dtype, `${t.name}: as stored`);
    }
  }
  assert.ok(blocks >= 2);
  // The same bytes as the lossless convert.
  assert.equal(CLIS.native(['convert', gguf, '--to', 'safetensors', '-o', join(f32, 'lossless.safetensors'), '-q']).status, 0);
  assert.ok(readFileSync(join(f32, 'lossless.safetensors')).equals(readFileSync(join(out.dir, 'tensor_types.safetensors'))));
  assert.equal(await outputName(gguf), 'tensor_types.safetensors');
});

test('a sharded PyTorch checkpoint: the folder <stem>/ beside its index; a folder of GGUF shards is suffixed', () => {
  const dir = scratchDir('amn-precision-');
  const copy = join(dir, 'ckpt');
  mkdirSync(copy);
  for (const f of readdirSync(fx('torch/sharded'))) copyFileSync(join(fx('torch/sharded'), f), join(copy, f));
  const r = CLIS.native(['remember', join(copy, 'pytorch_model.bin.index.json')]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.split(' (')[0], `wrote ${join(copy, 'pytorch_model')}/`);
  // Split GGUF shards in a folder: the folder output beside it would be the input folder.
  const split = join(dir, 'tiny');
  mkdirSync(split);
  for (const k of [1, 2, 3]) copyFileSync(fx(`gguf/valid/tiny-0000${k}-of-00003.gguf`), join(split, `tiny-0000${k}-of-00003.gguf`));
  for (const [cli, run] of Object.entries(CLIS)) {
    const s = run(['remember', split, '-q', '--force']);
    assert.equal(s.status, 0, `${cli}: ${s.stderr}`);
    assert.deepEqual(readdirSync(dir).sort(), ['ckpt', 'tiny', 'tiny-f32'], cli);
  }
});
