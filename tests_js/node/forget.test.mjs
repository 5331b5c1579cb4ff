// model.forget(): the producers' bytes through the npm package (in memory, a path, a
// folder through openShard), the Lethe report, progress and abort, the core's schemes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, loadPackage, tempDir } from '../support/helpers.js';

const amn = await loadPackage();
const fx = (p) => join(FIXTURES, p);

function tensorsOf(buf) {
  const b = Buffer.from(buf);
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name !== '__metadata__') out[name] = b.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]);
  }
  return out;
}

function assertProducerBytes(got, want) {
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort());
  for (const [name, bytes] of Object.entries(want)) assert.ok(got[name].equals(bytes), `${name}: the producer's bytes`);
}

test('forget int8 in memory: bitsandbytes\' bytes, the Lethe report, progress', async (t) => {
  const model = await amn.open(fx('lethe/bnb/int8.input.safetensors'));
  t.after(() => model.close());
  const seen = [];
  const r = await model.forget({ scheme: 'int8', onProgress: (p) => seen.push(p) });
  assert.ok(r.output instanceof Uint8Array);
  assertProducerBytes(tensorsOf(r.output), tensorsOf(await readFile(fx('lethe/bnb/int8.safetensors'))));
  assert.equal(r.tensors, 9);
  assert.equal(r.lethe.model.quantized, 3);
  assert.equal(JSON.stringify(JSON.parse(r.letheJson)), JSON.stringify(r.lethe));
  assert.match(r.letheText, /^forgot 3 of 3 tensors as bitsandbytes LLM\.int8\(\)/);
  assert.equal(seen.at(-1).done, seen.at(-1).total);
  assert.equal(seen.at(-1).total, r.output.byteLength);
});

test('forget nf4 with double quantization to a path; fp8-block, nvfp4 (fused global scale) and mxfp4 too', async (t) => {
  const dir = await tempDir(t);
  for (const [input, expected, options] of [
    ['lethe/bnb/nf4_dq.input.safetensors', 'lethe/bnb/nf4_dq.safetensors', { scheme: 'nf4', doubleQuant: true }],
    ['lethe/fp8/block.input.safetensors', 'lethe/fp8/block.safetensors', { scheme: 'fp8-block' }],
    ['lethe/nvfp4/input.safetensors', 'lethe/nvfp4/nvfp4.safetensors', { scheme: 'nvfp4' }],
    ['lethe/mxfp4/input.safetensors', 'lethe/mxfp4/mxfp4.safetensors', { scheme: 'mxfp4', only: '*' }],
  ]) {
    const model = await amn.open(fx(input));
    const path = join(dir, `${options.scheme}.safetensors`);
    try {
      const r = await model.forget({ ...options, sink: path });
      assert.equal(r.path, path);
      assertProducerBytes(tensorsOf(await readFile(path)), tensorsOf(await readFile(fx(expected))));
    } finally {
      await model.close();
    }
  }
});

test('a folder through openShard: model.safetensors and config.json with quantization_config', async (t) => {
  const model = await amn.open(fx('models/tiny-mlp'));
  t.after(() => model.close());
  const r = await model.forget({ scheme: 'fp4', blocksize: 128, openShard: () => null });
  assert.deepEqual(r.files.map((f) => f.name), ['model.safetensors', 'config.json']);
  const config = JSON.parse(Buffer.from(r.files[1].output).toString('utf8'));
  assert.equal(config.quantization_config.bnb_4bit_quant_type, 'fp4');
  assert.equal(config.quantization_config.load_in_4bit, true);
  assert.equal(model.outputName({ scheme: 'fp4' }), 'model-fp4.safetensors');
});

test('bad options are refused before any work; an abort stops it', async (t) => {
  const model = await amn.open(fx('lethe/bnb/nf4_dq.input.safetensors'));
  t.after(() => model.close());
  await assert.rejects(model.forget({ scheme: 'q9' }), (e) => e.code === 'invalid_argument' && /unknown scheme 'q9'/.test(e.message));
  await assert.rejects(model.forget({ scheme: 'nf4', blocksize: 48 }), (e) => e.code === 'invalid_argument' && /^blocksize 48/.test(e.message));
  await assert.rejects(model.forget({}), (e) => e.code === 'invalid_argument' && /scheme is required/.test(e.message));
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(model.forget({ scheme: 'nf4', signal: controller.signal }), (e) => e.name === 'AbortError' && e.cause?.code === 'cancelled');
  const schemes = await amn.forgetSchemes();
  assert.deepEqual(schemes.filter((s) => s.available && !s.to).map((s) => s.name), ['nf4', 'fp4', 'int8', 'fp8-block', 'fp8-channel', 'fp8-tensor', 'mxfp4', 'nvfp4', 'mlx']);
});

test('forget mlx with a mode: mx.quantize\'s bytes for mxfp4, nvfp4, mxfp8; bits the mode lacks refused', async (t) => {
  const model = await amn.open(fx('lethe/mlx_fp/modes_bf16.input.safetensors'));
  t.after(() => model.close());
  const want = tensorsOf(await readFile(fx('quantized/mlx/modes_bf16/model.safetensors')));
  for (const [mode, layer] of [['mxfp4', 'q_proj'], ['nvfp4', 'k_proj'], ['mxfp8', 'v_proj']]) {
    const got = tensorsOf((await model.forget({ scheme: 'mlx', mode })).output);
    for (const part of ['weight', 'scales']) {
      const name = `model.layers.0.self_attn.${layer}.${part}`;
      assert.ok(got[name].equals(want[name]), `${mode} ${name}: MLX's bytes`);
    }
  }
  await assert.rejects(model.forget({ scheme: 'mlx', mode: 'mxfp8', bits: 4 }), { code: 'invalid_argument', message: /^bits 4: mlx mode mxfp8 takes 8 only/ });
  await assert.rejects(model.forget({ scheme: 'mlx', mode: 'fp4' }), { code: 'invalid_argument', message: /^mode 'fp4': mlx takes affine, mxfp4, nvfp4 or mxfp8/ });
});

test('forget mlx: mx.quantize\'s bytes with bits and groupSize; bad values refused', async (t) => {
  const model = await amn.open(fx('lethe/mlx/f16.input.safetensors'));
  t.after(() => model.close());
  const want = tensorsOf(await readFile(fx('quantized/mlx/f16/model.safetensors')));
  const r = await model.forget({ scheme: 'mlx', bits: 6, groupSize: 128 });
  const got = tensorsOf(r.output);
  for (const part of ['weight', 'scales', 'biases']) {
    const name = `model.layers.0.self_attn.k_proj.${part}`;
    assert.ok(got[name].equals(want[name]), `${name}: MLX's bytes`);
  }
  await assert.rejects(model.forget({ scheme: 'mlx', bits: 7 }), { code: 'invalid_argument', message: /^bits 7: mlx takes 2, 3, 4, 5, 6 or 8/ });
  await assert.rejects(model.forget({ scheme: 'mlx', groupSize: 48 }), { code: 'invalid_argument', message: /^groupSize 48/ });
  await assert.rejects(model.forget({ scheme: 'int8', bits: 4 }), { code: 'invalid_argument', message: /^bits: only mlx/ });
});
