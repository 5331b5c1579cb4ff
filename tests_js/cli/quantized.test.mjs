// Quantized safetensors through every surface but the page (tests_js/browser has that):
// the native `amn` and `npx amn` as processes, and the npm API in Node. Outputs are
// compared with the bytes the producers' own dequantizers wrote
// (fixtures/quantized/<family>/<variant>.expected.safetensors), and the two CLIs with
// each other byte for byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, BIN, loadPackage } from '../support/helpers.js';
import { GPTQ_V2_QUANTIZE_CONFIG_ONLY, fixtureFiles } from '../support/quant-fixtures.js';

const AMN = join(ROOT, 'build', 'native', 'amn');
// [family folder, variant, scheme, config files (default: the fixture's config.json)]:
// every variant with an expected file, and the quantizers' own config files alone.
const QUANT_CASES = [
  ['fp8', 'block_e4m3', 'fp8'],
  ['fp8', 'channel_e4m3_ct', 'fp8'],
  ['fp8', 'tensor_e5m2', 'fp8'],
  ['fp8', 'block_inferred', 'fp8'],  // no config.json: the block inferred from the shapes
  ['gptq', 'w4_g128_sym_v1', 'gptq'],
  ['gptq', 'w4_g128_asym_actorder_v1', 'gptq'],
  ['gptq', 'w3_g128_asym_v1', 'gptq'],
  ['awq', 'w4_g64_odd', 'awq'],
  ['compressed_tensors', 'w4a16_g128_asym_actorder', 'compressed-tensors'],
  ['compressed_tensors', 'int8_channel_sym_naive', 'compressed-tensors'],
  ['mlx', 'mixed_bf16', 'mlx'],
  ['mlx', 'modes_bf16', 'mlx'],  // mxfp4 / nvfp4 / mxfp8 modes and stacked experts
  ['bnb', 'nf4', 'bnb-nf4'],
  ['bnb', 'fp4', 'bnb-fp4'],
  ['bnb', 'int8', 'bnb-int8'],
  ['bnb', 'mixed4', 'bnb-nf4|bnb-fp4'],
  ['bnb', 'nf4_nested_keys', 'bnb-nf4'],  // nested_* keys, no nested_absmax: plain NF4
  ['bnb', 'nf4_minimal_state', 'bnb-nf4'],  // no dtype in the quant_state: BF16
  ['mxfp4', 'gpt_oss', 'mxfp4'],
  ['nvfp4', 'modelopt', 'nvfp4'],
  ['nvfp4', 'compressed_tensors', 'nvfp4'],
  ['gptq', 'w4_g128_asym_v2', 'gptq', GPTQ_V2_QUANTIZE_CONFIG_ONLY],
  ['awq', 'w4_g128', 'awq', { 'quant_config.json': 'awq/w4_g128/quant_config.json' }],  // AutoAWQ < 0.2
];

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'buffer' });
  return { code: r.status, out: r.stdout, err: r.stderr.toString() };
}
const native = (args) => run(AMN, args);
const node = (args) => run(process.execPath, [BIN, ...args]);

// A model folder as people have it: model.safetensors with its config files.
function folderOf(family, variant, configs) {
  const dir = mkdtempSync(join(tmpdir(), 'amn-quant-'));
  const files = fixtureFiles(family, variant, configs);
  copyFileSync(files.model, join(dir, 'model.safetensors'));
  for (const c of files.configs) copyFileSync(c.path, join(dir, c.name));
  return dir;
}

function tensorsOf(bytes) {
  const n = Number(Buffer.from(bytes).readBigUInt64LE(0));
  const header = JSON.parse(Buffer.from(bytes.subarray(8, 8 + n)).toString('utf8'));
  delete header.__metadata__;
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    out[name] = { dtype: t.dtype, shape: t.shape, bytes: Buffer.from(bytes.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1])) };
  }
  return out;
}

// transformers returns gpt-oss MXFP4 experts as [experts, in, out]; we write the nn.Linear
// orientation [experts, out, in] (docs/formats/quantized/mxfp4.md). Its bytes, transposed.
function asLinear(w, shape) {
  if (w.shape.length !== 3 || shape.length !== 3 || w.shape[1] !== shape[2] || w.shape[2] !== shape[1]) return w.bytes;
  const [e, a, b] = w.shape;
  const el = w.bytes.length / (e * a * b);
  const out = Buffer.alloc(w.bytes.length);
  for (let x = 0; x < e; x += 1) {
    for (let i = 0; i < a; i += 1) {
      for (let j = 0; j < b; j += 1) {
        w.bytes.copy(out, ((x * b + j) * a + i) * el, ((x * a + i) * b + j) * el, ((x * a + i) * b + j + 1) * el);
      }
    }
  }
  return out;
}

function assertProducerBytes(got, want, label) {
  for (const [name, w] of Object.entries(want)) {
    assert.ok(got[name], `${label}: ${name} written`);
    assert.equal(got[name].dtype, w.dtype, `${label}: ${name} dtype`);
    assert.deepEqual(got[name].shape, w.shape, `${label}: ${name} shape`);
    assert.ok(got[name].bytes.equals(w.bytes), `${label}: ${name} differs from the producer's bytes`);
  }
}

for (const [family, variant, scheme, configs] of QUANT_CASES) {
  const label = configs ? `${family}/${variant} with ${Object.keys(configs).join(' + ')} only` : `${family}/${variant}`;
  test(`${label}: both CLIs and the npm API give the producer's bytes`, { timeout: 120_000 }, async (t) => {
    // Expected tensors are named as the logical weight (the producer's own dtype), or
    // "<name>@bf16" etc. where the producer's output was also cast to each target.
    const expected = tensorsOf(readFileSync(fixtureFiles(family, variant).expected));
    const want = Object.fromEntries(Object.entries(expected).filter(([n]) => !n.includes('@')));
    const targeted = Object.entries(expected).filter(([n]) => n.includes('@'))
      .map(([n, w]) => { const [name, to] = n.split('@'); return { name, to, w }; });
    const dir = folderOf(family, variant, configs);
    const outDir = mkdtempSync(join(tmpdir(), 'amn-quant-out-'));  // outputs beside would join the model
    t.after(() => { rmSync(dir, { recursive: true, force: true }); rmSync(outDir, { recursive: true, force: true }); });

    // inspect / parse, text and JSON: the same bytes from both CLIs.
    for (const args of [['inspect', dir], ['inspect', dir, '--json'], ['parse', dir]]) {
      const a = native(args);
      const b = node(args);
      assert.equal(a.code, 0, a.err);
      assert.equal(b.code, 0, b.err);
      assert.ok(a.out.equals(b.out), `${args.join(' ')}: native and Node CLIs differ`);
    }
    const info = JSON.parse(native(['inspect', dir, '--json']).out.toString());
    for (const name of new Set([...Object.keys(want), ...targeted.map((x) => x.name)])) {
      const l = info.logical.find((x) => x.name === name);
      assert.ok(l, `${name} found as a quantized weight`);
      assert.match(l.scheme, new RegExp(`^(${scheme})$`));
      assert.equal(l.error, undefined);
    }
    // The quantizer's own config file, when there is one, is what detection read.
    const own = Object.keys(configs ?? {}).find((n) => n !== 'config.json');
    assert.equal(info.quantize_config?.file, own);
    if (own) for (const l of info.logical) assert.match(l.variant, new RegExp(`\\(${own.replace('.', '\\.')}\\)$`));
    // Targets the producer's output was cast to: remember --to gives those bytes.
    for (const to of new Set(targeted.map((x) => x.to))) {
      const out = join(outDir, `to-${to}.safetensors`);
      const r = native(['remember', dir, '--to', to, '-o', out, '-q']);
      assert.equal(r.code, 0, r.err);
      const got = tensorsOf(readFileSync(out));
      for (const x of targeted.filter((y) => y.to === to)) {
        assert.ok(got[x.name]?.bytes.equals(asLinear(x.w, got[x.name].shape)), `remember --to ${to}: ${x.name} differs from the producer's bytes`);
      }
    }

    // convert without --dtype: each weight in the dtype its producer's dequantizer returns.
    for (const [label, cli] of [['native', native], ['node', node]]) {
      const out = join(outDir, `${label}.safetensors`);
      const r = cli(['convert', dir, '--to', 'safetensors', '-o', out, '-q']);
      assert.equal(r.code, 0, r.err);
      assertProducerBytes(tensorsOf(readFileSync(out)), want, `${label} convert`);
    }
    // remember --to f16: native and Node identical.
    const a = join(outDir, 'a.safetensors'); const b = join(outDir, 'b.safetensors');
    assert.equal(native(['remember', dir, '--to', 'f16', '-o', a, '-q']).code, 0);
    assert.equal(node(['remember', dir, '--to', 'f16', '-o', b, '-q']).code, 0);
    assert.ok(readFileSync(a).equals(readFileSync(b)), 'remember --to f16: native and Node differ');

    // The npm API: model.tensor() of a quantized weight, and convert() to bytes.
    const amn = await loadPackage('node.js');
    const model = await amn.open(dir);
    try {
      assert.deepEqual(model.info.logical.map((l) => l.name).filter((n) => n in want).sort(), Object.keys(want).sort());
      for (const x of targeted) {
        const t = await model.tensor(x.name, { to: x.to });
        assert.ok(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).equals(asLinear(x.w, t.shape)), `tensor(${x.name}, ${x.to})`);
      }
      for (const [name, w] of Object.entries(want)) {
        const t = await model.tensor(name);
        assert.equal(t.dtype, w.dtype, name);
        assert.ok(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).equals(w.bytes), `tensor(${name})`);
      }
      const bytes = await model.convert();
      assertProducerBytes(tensorsOf(new Uint8Array(await bytes.arrayBuffer?.() ?? bytes)), want, 'npm convert');
    } finally {
      await model.close();
    }
  });
}

// A folder holding a GPTQ model and what `amn remember` writes beside it by default
// (model-f16.safetensors: GPTQ's natural dtype is its scales' F16): the two would give two
// tensors of one name. Both CLIs refuse
// before writing, naming both sources; nothing is written.
test('a quantized model beside its -f16 output: convert refuses the name collision, writes nothing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'amn-collide-'));
  try {
    const src = join(ROOT, 'fixtures', 'quantized', 'gptq', 'w4_g128_sym_v1');
    for (const f of ['model.safetensors', 'config.json', 'quantize_config.json']) copyFileSync(join(src, f), join(dir, f));
    const first = spawnSync(AMN, ['remember', join(dir, 'model.safetensors'), '-q'], { encoding: 'utf8' });
    assert.equal(first.status, 0, first.stderr);
    const name = 'model.layers.0.self_attn.q_proj.weight';
    for (const [label, argv] of [['native', [AMN]], ['node', [process.execPath, BIN]]]) {
      for (const verb of [['convert', dir, '--to', 'safetensors', '-o', join(dir, `out-${label}.safetensors`)],
        ['remember', dir, '-o', join(dir, `out-${label}-r.safetensors`)],
        ['convert', dir, '--to', 'gguf', '-o', join(dir, `out-${label}.gguf`)]]) {
        const r = spawnSync(argv[0], [...argv.slice(1), ...verb, '-q'], { encoding: 'utf8' });
        assert.equal(r.status, 1, `${label} ${verb[0]}: ${r.stderr}`);
        assert.match(r.stderr, new RegExp(`^amn: error \\[parse\\]: two output tensors would be named '${name.replaceAll('.', '\\.')}': `
          + 'the gptq weight made of .*q_proj\\.qweight.* \\(in model\\.safetensors\\) and the F16 tensor '
          + `${name.replaceAll('.', '\\.')} \\(in model-f16\\.safetensors\\)`), `${label} ${verb[0]}`);
      }
    }
    assert.deepEqual(readdirSync(dir).sort(), ['config.json', 'model-f16.safetensors', 'model.safetensors', 'quantize_config.json']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// What detection assumed, said as warnings by both CLIs (text and JSON) and the npm API.
test('assumed dtypes and inferred FP8 blocks are warnings on every surface', async () => {
  const cases = [
    ['bnb', 'nf4_minimal_state', ['bitsandbytes quant_state without "dtype" (bitsandbytes always writes it): '
      + 'dequantized to bfloat16 by default: model.layers.0.self_attn.o_proj.weight']],
    ['fp8', 'block_inferred', [
      'FP8 block size 128x128 inferred from the weight and scale shapes (no config names weight_block_size): '
        + 'model.layers.0.mlp.down_proj.weight',
      'FP8 block size 4x4 inferred from the weight and scale shapes (no config names weight_block_size): '
        + 'model.layers.0.self_attn.q_proj.weight']],
    ['bnb', 'nf4_nested_keys', []],
  ];
  const amn = await loadPackage('node.js');
  for (const [family, variant, warnings] of cases) {
    const dir = folderOf(family, variant);
    try {
      for (const cli of [native, node]) {
        const json = cli(['inspect', dir, '--json']);
        assert.equal(json.code, 0, json.err);
        assert.deepEqual(JSON.parse(json.out.toString()).warnings, warnings, `${variant}: warnings`);
        const text = cli(['inspect', dir]);
        for (const w of warnings) assert.ok(text.out.toString().includes(`warning: ${w}\n`), `${variant}: ${w}`);
      }
      const model = await amn.open(dir);
      try {
        assert.deepEqual(model.info.warnings, warnings, `${variant}: npm info.warnings`);
      } finally {
        await model.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
