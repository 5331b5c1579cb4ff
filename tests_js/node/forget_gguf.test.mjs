// model.forget({ to: 'gguf' }): ggml's blocks through the npm package, and the name it
// would take.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadPackage } from '../support/helpers.js';
import { ggufForgetInput, ggmlBlocks, ggufTensors } from '../support/gguf_input.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'IQ1_S' }), (e) => e.code === 'invalid_argument' && /imatrix/.test(e.message));
  assert.equal(model.outputName({ scheme: 'Q4_K', to: 'gguf' }).endsWith('-q4_k.gguf'), true);
});

test('every ggml type forgetSchemes lists: ggml\'s blocks from the WASM core too', async (t) => {
  const rows = (await amn.forgetSchemes()).filter((s) => s.to === 'gguf' && s.pure);
  assert.deepEqual(rows.filter((s) => s.imatrix).map((s) => s.name).sort(), ['IQ1_S', 'IQ2_XS', 'IQ2_XXS']);
  const gguf = rows.filter((s) => !s.imatrix).map((s) => s.name);  // these need a matrix: below
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
    ['tiny-Q4_K_M-tensor_type.gguf', { scheme: 'Q4_K_M', tensorType: ['blk\\.0\\.attn_v=q8_0', 'ffn_(up|gate)=q5_0', 'blk\\.1\\.ffn_up=q8_0', 'BLK\\.2\\.ATTN_Q=iq4_nl', 'attn_output=q4_k'] }],
    // tensorTypeFile: the same entries, after tensorType's, as bytes and as a Blob.
    ['tiny-Q4_K_M-tensor_type.gguf', { scheme: 'Q4_K_M', tensorType: 'blk\\.0\\.attn_v=q8_0',
      tensorTypeFile: new TextEncoder().encode('ffn_(up|gate)=q5_0\nblk\\.1\\.ffn_up=q8_0\n\n BLK\\.2\\.ATTN_Q=iq4_nl\tattn_output=q4_k') }],
    ['tiny-Q4_K_M-tensor_type.gguf', { scheme: 'Q4_K_M',
      tensorTypeFile: new Blob(['blk\\.0\\.attn_v=q8_0 ffn_(up|gate)=q5_0 blk\\.1\\.ffn_up=q8_0 BLK\\.2\\.ATTN_Q=iq4_nl attn_output=q4_k\n']) }],
  ]) {
    const r = await model.forget({ to: 'gguf', ...options });
    const want = await ggufTensors(amn, readFileSync(new URL(fixture, dir)));
    assert.deepEqual(await ggufTensors(amn, Buffer.from(r.output)), want, fixture);
  }
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', outputTensorType: 'Q9_K' }),
    (e) => e.code === 'invalid_argument' && /outputTensorType/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', tensorType: 'attn_v=q9_k' }),
    (e) => e.code === 'invalid_argument' && /tensorType/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', tensorType: ['attn_v[=q8_0'] }),
    (e) => e.code === 'invalid_argument' && /not a regular expression/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', tensorTypeFile: new TextEncoder().encode('# a comment\n') }),
    (e) => e.code === 'invalid_argument' && /tensorType/.test(e.message));
  await assert.rejects(model.forget({ scheme: 'nf4', tensorTypeFile: new Uint8Array(0) }),
    (e) => e.code === 'invalid_argument' && /tensorTypeFile needs GGUF output/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', tensorTypeFile: new Uint8Array((4 << 20) + 1).fill(32) }),
    (e) => e.code === 'limit' && /tensorTypeFile: the file is over 4 MiB/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'IQ3_XS' }), (e) => e.code === 'invalid_argument' && /importance matrix/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', pruneLayers: [-1] }),
    (e) => e.code === 'invalid_argument' && /pruneLayers/.test(e.message));
  // llama-quantize --prune-layers 1, as numbers and as its text: its tensors and types; the
  // renumbered layer holds old layer 2's blocks (llama-quantize's hold the pruned layer's:
  // README.md; tests_native/test_forget_gguf_ftype.cpp checks the bytes).
  const pruned = await ggufTensors(amn, readFileSync(new URL('tiny-Q4_K_M-prune-1.gguf', dir)));
  const unpruned = await ggufTensors(amn, readFileSync(new URL('tiny-Q4_K_M.gguf', dir)));
  for (const pruneLayers of [[1], '1']) {
    const got = await ggufTensors(amn, Buffer.from((await model.forget({ to: 'gguf', scheme: 'Q4_K_M', pruneLayers })).output));
    assert.deepEqual(Object.keys(got).sort(), Object.keys(pruned).sort());
    for (const [name, [type, hash]] of Object.entries(got)) {
      assert.equal(type, pruned[name][0], name);
      if (!name.startsWith('blk.1.')) assert.equal(hash, pruned[name][1], name);
    }
    assert.deepEqual(got['blk.1.ffn_up.weight'], unpruned['blk.2.ffn_up.weight']);
  }
});

test('forget to gguf with keepSplit: llama-quantize --keep-split\'s files through openShard', async (t) => {
  const dir = new URL('../../fixtures/gguf_ftype/', import.meta.url);
  const model = await amn.open(fileURLToPath(new URL('tiny-tied-split-00001-of-00003.gguf', dir)));
  t.after(() => model.close());
  assert.equal(model.outputLayout({ to: 'gguf', keepSplit: true }).folder, true);
  const r = await model.forget({ to: 'gguf', scheme: 'Q4_K_M', keepSplit: true, openShard: () => null });
  assert.equal(r.files.length, 3);
  for (const [k, f] of r.files.entries()) {
    assert.match(f.name, new RegExp(`-0000${k + 1}-of-00003\\.gguf$`));
    const want = readFileSync(new URL(`tiny-tied-Q4_K_M-keep-split-0000${k + 1}-of-00003.gguf`, dir));
    assert.deepEqual(await ggufTensors(amn, Buffer.from(f.output)), await ggufTensors(amn, want), f.name);
  }
  // One file of a set, opened alone (bytes): keepSplit has nothing to keep, one file.
  const alone = await amn.open(new Uint8Array(readFileSync(new URL('tiny_llama_tied_f16.gguf', dir))));
  t.after(() => alone.close());
  assert.equal(alone.outputLayout({ to: 'gguf', keepSplit: true }).folder, false);
});

test('forget to gguf with an importance matrix: llama-quantize --imatrix\'s tensors and KVs, from bytes, a File or a path', async (t) => {
  const dir = new URL('../../fixtures/gguf_ftype/', import.meta.url);
  const model = await amn.open(new URL('tiny_llama_f16.gguf', dir));
  t.after(() => model.close());
  const matrix = readFileSync(new URL('tiny.imatrix.gguf', dir));
  const kv = async (bytes) => {
    const m = await amn.open(new Uint8Array(bytes));
    try {
      return Object.fromEntries(Object.entries(m.info.details.kv).filter(([k]) => k.startsWith('quantize.imatrix.')).map(([k, v]) => [k, v.value]));
    } finally {
      await m.close();
    }
  };
  for (const [fixture, scheme] of [['tiny-imatrix-IQ2_XS.gguf', 'IQ2_XS'], ['tiny-imatrix-Q4_K_M.gguf', 'Q4_K_M']]) {
    const want = readFileSync(new URL(fixture, dir));
    for (const [imatrix, name] of [[new Uint8Array(matrix), 'imatrix'], [new File([matrix], 'tiny.imatrix.gguf'), 'tiny.imatrix.gguf'],
      [fileURLToPath(new URL('tiny.imatrix.gguf', dir)), fileURLToPath(new URL('tiny.imatrix.gguf', dir))]]) {
      const r = await model.forget({ to: 'gguf', scheme, imatrix });
      assert.deepEqual(await ggufTensors(amn, Buffer.from(r.output)), await ggufTensors(amn, want), fixture);
      assert.deepEqual(await kv(r.output), { ...(await kv(want)), 'quantize.imatrix.file': name });
    }
  }
  const r = await model.forget({ to: 'gguf', scheme: 'IQ4_XS', imatrix: readFileSync(new URL('tiny.imatrix.dat', dir)), imatrixName: 'tiny.imatrix.dat' });
  assert.deepEqual(await ggufTensors(amn, Buffer.from(r.output)), await ggufTensors(amn, readFileSync(new URL('tiny-imatrix-IQ4_XS.gguf', dir))));
  assert.equal((await kv(r.output))['quantize.imatrix.file'], 'tiny.imatrix.dat');
  // llama-quantize --include-weights attn_v --include-weights ffn_down (fixtures/gguf_ftype/README.md)
  const some = await model.forget({ to: 'gguf', scheme: 'IQ4_XS', imatrix: new Uint8Array(matrix), includeWeights: ['attn_v', 'ffn_down'] });
  assert.deepEqual(await ggufTensors(amn, Buffer.from(some.output)),
    await ggufTensors(amn, readFileSync(new URL('tiny-imatrix-include-IQ4_XS.gguf', dir))));
  assert.equal((await kv(some.output))['quantize.imatrix.entries_count'], 6);
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', excludeWeights: ['attn_v'] }),
    (e) => e.code === 'invalid_argument' && e.message === 'excludeWeights needs imatrix');
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'IQ2_XS' }), (e) => e.code === 'invalid_argument' && /imatrix/.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', imatrix: new Uint8Array([0, 0, 0, 0]) }),
    (e) => e.code === 'parse' && /^imatrix: /.test(e.message));
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q4_K_M', imatrix: 42 }), (e) => e.code === 'invalid_argument');
});

test('forget to gguf from a quantized GGUF: refused without allowRequantize, llama-quantize\'s tensors with it', async (t) => {
  const dir = new URL('../../fixtures/gguf_ftype/', import.meta.url);
  const model = await amn.open(new URL('tiny-Q4_K_M.gguf', dir));
  t.after(() => model.close());
  await assert.rejects(model.forget({ to: 'gguf', scheme: 'Q3_K_M' }), (e) => e.code === 'invalid_argument' && /allowRequantize|allow-requantize/.test(e.message));
  const r = await model.forget({ to: 'gguf', scheme: 'Q3_K_M', allowRequantize: true });
  assert.deepEqual(await ggufTensors(amn, Buffer.from(r.output)),
    await ggufTensors(amn, readFileSync(new URL('tiny-Q4_K_M-requant-Q3_K_M.gguf', dir))));
});

test('likeFormat: what forgetting like a model writes, the core\'s rule (a GGUF reference writes GGUF)', async () => {
  const gguf = await amn.open(new URL('../../fixtures/gguf_ftype/tiny-Q4_K_M.gguf', import.meta.url));
  const st = await amn.open(new URL('../../fixtures/models/tiny-mlp/model.safetensors', import.meta.url));
  try {
    assert.equal(gguf.likeFormat, 'gguf');
    assert.equal(st.likeFormat, 'safetensors');
  } finally {
    await gguf.close();
    await st.close();
  }
  assert.throws(() => gguf.likeFormat, (e) => e.code === 'invalid_argument' || e.code === 'closed');
});
