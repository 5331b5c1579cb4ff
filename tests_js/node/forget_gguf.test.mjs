// model.forget({ to: 'gguf' }): ggml's blocks through the npm package, and the name it
// would take.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadPackage } from '../support/helpers.js';
import { ggufForgetInput, ggmlBlocks, ggufTensors } from '../support/gguf_input.js';
import { readFileSync } from 'node:fs';

const amn = await loadPackage();

test('forget to gguf in memory: ggml\'s Q4_0 blocks, the norm kept, the Lethe report', async (t) => {
  const model = await amn.open(new Uint8Array(ggufForgetInput()));
  t.after(() => model.close());
  const r = await model.forget({ to: 'gguf', scheme: 'Q4_0', pure: true });
  const bytes = Buffer.from(r.output);
  assert.equal(bytes.subarray(0, 4).toString('latin1'), 'GGUF');
  assert.ok(bytes.indexOf(ggmlBlocks('Q4_0')) > 0);
  assert.equal(r.lethe.model.quantized, 1);
  assert.equal(r.lethe.model.kept, 1);
  assert.ok(r.lethe.model.cosine > 0.99);
  // Read back by amn: the weight is Q4_0, the norm F32.
  const back = await amn.open(r.output);
  t.after(() => back.close());
  const types = Object.fromEntries(back.info.tensors.map((x) => [x.name, x.dtype]));
  assert.equal(types['blk.0.attn_norm.weight'], 'F32');
  assert.match(JSON.stringify(back.info), /Q4_0/);
});

test('forget to gguf: refusals name the option as the API spells it', async (t) => {
  const model = await amn.open(new Uint8Array(ggufForgetInput()));
  t.after(() => model.close());
  await assert.rejects(model.forget({ scheme: 'q4_0' }), (e) => e.code === 'invalid_argument' && /to gguf/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'IQ1_S' }), (e) => e.code === 'unsupported');
  assert.equal(model.outputName({ scheme: 'Q4_K', to: 'gguf' }).endsWith('-q4_k.gguf'), true);
});

test('every ggml type forgetSchemes lists: ggml\'s blocks from the WASM core too', async (t) => {
  const gguf = (await amn.forgetSchemes()).filter((s) => s.to === 'gguf' && s.pure).map((s) => s.name);
  for (const type of ['F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K']) {
    assert.ok(gguf.includes(type), type);
  }
  const model = await amn.open(new Uint8Array(ggufForgetInput()));
  t.after(() => model.close());
  for (const type of gguf) {
    const r = await model.forget({ to: 'gguf', scheme: type, pure: true });
    assert.ok(Buffer.from(r.output).indexOf(ggmlBlocks(type)) > 0, `${type}: ggml's blocks`);
  }
});

test('forget to gguf with a llama-quantize file type: llama-quantize\'s tensors (fixtures/gguf_ftype)', async (t) => {
  const dir = new URL('../../fixtures/gguf_ftype/', import.meta.url);
  const model = await amn.open(new Uint8Array(readFileSync(new URL('tiny_llama_f16.gguf', dir))));
  t.after(() => model.close());
  for (const [fixture, options] of [
    ['tiny-Q4_K_M.gguf', { scheme: 'Q4_K_M' }],
    ['tiny-IQ4_XS.gguf', { scheme: 'iq4_xs' }],
    ['tiny-Q4_K_M-embd_q8_0-out_q5_k.gguf', { scheme: 'Q4_K_M', tokenEmbeddingType: 'Q8_0', outputTensorType: 'q5_k' }],
    ['tiny-Q3_K_L-leave_output.gguf', { scheme: 'Q3_K_L', leaveOutputTensor: true }],
  ]) {
    const r = await model.forget({ to: 'gguf', ...options });
    const want = await ggufTensors(amn, readFileSync(new URL(fixture, dir)));
    assert.deepEqual(await ggufTensors(amn, Buffer.from(r.output)), want, fixture);
  }
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', outputTensorType: 'Q9_K' }),
    (e) => e.code === 'invalid_argument' && /outputTensorType/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'IQ3_XS' }), (e) => e.code === 'unsupported' && /importance matrix/.test(e.message));
});
