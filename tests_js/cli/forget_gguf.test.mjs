// `amn forget --to gguf` as a process, native and Node: the same file and the same lines
// from both CLIs, the weight's blocks exactly ggml_quantize_chunk's (fixtures/ggml_quant),
// and misuse refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from '../support/helpers.js';
import { ggufForgetInput, ggmlBlocks, ggufTensors } from '../support/gguf_input.js';
import { loadPackage } from '../support/helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/dist/amn.cjs');

function run(cli, args) {
  const r = cli === 'native'
    ? spawnSync(AMN, args, { encoding: 'utf8' })
    : spawnSync(process.execPath, [NODE_AMN, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('forget --to gguf: ggml\'s blocks, the same bytes and lines from both CLIs', () => {
  const dir = scratchDir('amn-forget-gguf-');
  const input = join(dir, 'model.safetensors');
  writeFileSync(input, ggufForgetInput());
  for (const [scheme, type] of [['q4_k', 'Q4_K'], ['Q8_0', 'Q8_0'], ['q5_1', 'Q5_1']]) {
    const outs = {};
    for (const cli of ['native', 'node']) {
      const out = join(dir, `${cli}-${type}.gguf`);
      const r = run(cli, ['forget', input, '--to', 'gguf', '--scheme', scheme, '--pure', '-o', out]);
      assert.equal(r.code, 0, `${cli}: ${r.err}`);
      outs[cli] = { path: out, text: r.out.replaceAll(out, 'OUT') };
    }
    assert.equal(outs.node.text, outs.native.text);
    assert.match(outs.native.text, new RegExp(`forgot 1 of 2 tensors as ${type}`));
    const bytes = readFileSync(outs.native.path);
    assert.deepEqual(readFileSync(outs.node.path), bytes);
    assert.equal(bytes.subarray(0, 4).toString('latin1'), 'GGUF');
    assert.ok(bytes.indexOf(ggmlBlocks(type)) > 0, `${type}: ggml's blocks in the file`);
  }
});

test('forget --to gguf: the default name, and misuse refused the same way by both CLIs', () => {
  const dir = scratchDir('amn-forget-gguf-');
  const input = join(dir, 'model.safetensors');
  writeFileSync(input, ggufForgetInput());
  const r = run('native', ['forget', input, '--to', 'gguf', '--scheme', 'Q6_K', '--pure', '-q']);
  assert.equal(r.code, 0, r.err);
  assert.ok(readFileSync(join(dir, 'model-q6_k.gguf')).indexOf(ggmlBlocks('Q6_K')) > 0);
  for (const args of [['--scheme', 'Q4_0'], ['--to', 'gguf', '--scheme', 'Q4_K_X'], ['--scheme', 'nf4', '--pure'],
    ['--to', 'gguf', '--scheme', 'Q4_K_M', '--leave-output-tensor', '--output-tensor-type', 'q8_0']]) {
    const native = run('native', ['forget', input, ...args]);
    const node = run('node', ['forget', input, ...args]);
    assert.equal(native.code, 2, native.err);
    assert.equal(node.code, 2, node.err);
    assert.equal(node.err, native.err);
  }
  // A type that needs an importance matrix, without one: a usage error from both.
  const iq = run('native', ['forget', input, '--to', 'gguf', '--scheme', 'IQ2_XXS']);
  assert.equal(iq.code, 2);
  assert.match(iq.err, /--imatrix: IQ2_XXS needs an importance matrix/);
  assert.equal(run('node', ['forget', input, '--to', 'gguf', '--scheme', 'IQ2_XXS']).err, iq.err);
});

test('forget --to gguf with llama-quantize\'s file types and options: its tensors, from both CLIs', async () => {
  const amn = await loadPackage();
  const dir = scratchDir('amn-forget-ftype-');
  const fixtures = join(root, 'fixtures/gguf_ftype');
  const input = join(fixtures, 'tiny_llama_f16.gguf');
  // --tensor-type-file: the same overrides from a file (words between any white space),
  // after a --tensor-type option.
  const typesFile = join(dir, 'tensor_types.txt');
  writeFileSync(typesFile, 'ffn_(up|gate)=q5_0\n  blk\\.1\\.ffn_up=q8_0 \tBLK\\.2\\.ATTN_Q=iq4_nl\r\nattn_output=q4_k\n');
  for (const [k, [fixture, args]] of [
    ['tiny-Q5_K_M.gguf', ['--scheme', 'Q5_K_M']],
    ['tiny-Q4_K_M-embd_q8_0-out_q5_k.gguf', ['--scheme', 'q4_k_m', '--token-embedding-type', 'q8_0', '--output-tensor-type', 'Q5_K']],
    ['tiny-Q3_K_L-leave_output.gguf', ['--scheme', 'Q3_K_L', '--leave-output-tensor']],
    // --tensor-type: regular expressions, the first match wins, names lowercased; a
    // matched tensor skips the file type's counters (blk.2.attn_v is not bumped to Q6_K).
    ['tiny-Q4_K_M-tensor_type.gguf', ['--scheme', 'Q4_K_M', '--tensor-type', 'blk\\.0\\.attn_v=q8_0', '--tensor-type', 'ffn_(up|gate)=q5_0', '--tensor-type', 'blk\\.1\\.ffn_up=q8_0', '--tensor-type', 'BLK\\.2\\.ATTN_Q=iq4_nl', '--tensor-type', 'attn_output=q4_k']],
    ['tiny-Q4_K_M-tensor_type.gguf', ['--scheme', 'Q4_K_M', '--tensor-type', 'blk\\.0\\.attn_v=q8_0', '--tensor-type-file', typesFile]],
  ].entries()) {
    const want = await ggufTensors(amn, readFileSync(join(fixtures, fixture)));
    const outs = [];
    for (const cli of ['native', 'node']) {
      const out = join(dir, `${cli}-${k}-${fixture}`);
      const r = run(cli, ['forget', input, '--to', 'gguf', ...args, '-q', '-o', out]);
      assert.equal(r.code, 0, `${cli}: ${r.err}`);
      outs.push(readFileSync(out));
    }
    assert.deepEqual(outs[1], outs[0], fixture);
    assert.deepEqual(await ggufTensors(amn, outs[0]), want, fixture);
  }
});

test('forget --to gguf --imatrix / --allow-requantize: llama-quantize\'s tensors and KVs, the same from both CLIs', async () => {
  const amn = await loadPackage();
  const dir = scratchDir('amn-forget-imatrix-');
  const fixtures = join(root, 'fixtures/gguf_ftype');
  const kvs = async (bytes) => {
    const m = await amn.open(new Uint8Array(bytes));
    try {
      return Object.fromEntries(Object.entries(m.info.details.kv).filter(([k]) => k.startsWith('quantize.imatrix.')));
    } finally {
      await m.close();
    }
  };
  for (const [fixture, input, args] of [
    ['tiny-imatrix-IQ4_XS.gguf', 'tiny_llama_f16.gguf', ['--scheme', 'IQ4_XS', '--imatrix', 'tiny.imatrix.dat']],
    ['tiny-imatrix-IQ2_XS.gguf', 'tiny_llama_f16.gguf', ['--scheme', 'IQ2_XS', '--imatrix', 'tiny.imatrix.gguf']],
    ['tiny-imatrix-exclude-Q4_K_M.gguf', 'tiny_llama_f16.gguf',
      ['--scheme', 'Q4_K_M', '--imatrix', 'tiny.imatrix.gguf', '--exclude-weights', 'attn_v', '--exclude-weights', 'blk.1.']],
    ['tiny-Q4_K_M-requant-Q3_K_M.gguf', 'tiny-Q4_K_M.gguf', ['--scheme', 'Q3_K_M', '--allow-requantize']],
  ]) {
    const want = readFileSync(join(fixtures, fixture));
    const outs = [];
    for (const cli of ['native', 'node']) {
      const out = join(dir, `${cli}-${fixture}`);
      // Run in the fixtures' folder: the matrix named as llama-quantize was given it.
      const r = cli === 'native'
        ? spawnSync(AMN, ['forget', input, '--to', 'gguf', ...args, '-q', '-o', out], { encoding: 'utf8', cwd: fixtures })
        : spawnSync(process.execPath, [NODE_AMN, 'forget', input, '--to', 'gguf', ...args, '-q', '-o', out], { encoding: 'utf8', cwd: fixtures });
      assert.equal(r.status, 0, `${cli}: ${r.stderr}`);
      outs.push(readFileSync(out));
    }
    assert.deepEqual(outs[1], outs[0], fixture);
    assert.deepEqual(await ggufTensors(amn, outs[0]), await ggufTensors(amn, want), fixture);
    const got = await kvs(outs[0]);
    const expected = await kvs(want);
    if (args.includes('tiny.imatrix.dat')) expected['quantize.imatrix.file'] = { type: 'STRING', value: 'tiny.imatrix.dat' };
    assert.deepEqual(got, expected, fixture);
  }
  // Refusals: the same lines from both.
  for (const args of [['tiny-Q4_K_M.gguf', '--scheme', 'Q3_K_M'], ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--imatrix', 'missing.dat'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--imatrix', 'tiny-Q8_0.gguf'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--include-weights', 'attn_v'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--tensor-type', 'attn_v(=q8_0'], ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--tensor-type', 'attn_v'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--tensor-type', 'attn_v=q9_0'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--tensor-type-file', 'missing.txt'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--tensor-type-file', 'README.md'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--imatrix', 'tiny.imatrix.gguf', '--include-weights', 'a', '--exclude-weights', 'b'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--prune-layers', '1,x'],
    ['tiny_llama_f16.gguf', '--scheme', 'Q4_K_M', '--keep-split', '--split-max-tensors', '4']]) {
    const native = spawnSync(AMN, ['forget', ...args.slice(0, 1), '--to', 'gguf', ...args.slice(1), '-o', join(dir, 'x.gguf')], { encoding: 'utf8', cwd: fixtures });
    const node = spawnSync(process.execPath, [NODE_AMN, 'forget', ...args.slice(0, 1), '--to', 'gguf', ...args.slice(1), '-o', join(dir, 'x.gguf')],
      { encoding: 'utf8', cwd: fixtures });
    assert.notEqual(native.status, 0, args.join(' '));
    assert.equal(node.status, native.status, args.join(' '));
    assert.equal(node.stderr, native.stderr, args.join(' '));
  }
});

test('forget --to gguf --prune-layers: the same file from both CLIs, layer 2 renumbered', async () => {
  const amn = await loadPackage();
  const dir = scratchDir('amn-forget-prune-');
  const fixtures = join(root, 'fixtures/gguf_ftype');
  const outs = [];
  for (const cli of ['native', 'node']) {
    const out = join(dir, `${cli}.gguf`);
    const r = run(cli, ['forget', join(fixtures, 'tiny_llama_f16.gguf'), '--to', 'gguf', '--scheme', 'Q4_K_M', '--prune-layers', '1', '-q', '-o', out]);
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    outs.push(readFileSync(out));
  }
  assert.deepEqual(outs[1], outs[0]);
  const got = await ggufTensors(amn, outs[0]);
  const unpruned = await ggufTensors(amn, readFileSync(join(fixtures, 'tiny-Q4_K_M.gguf')));
  assert.equal(Object.keys(got).length, 21);
  assert.deepEqual(got['blk.1.ffn_up.weight'], unpruned['blk.2.ffn_up.weight']);
  assert.equal(got['blk.2.ffn_up.weight'], undefined);
});

test('forget --to gguf --keep-split: llama-quantize\'s split files, the same bytes from both CLIs', async () => {
  const amn = await loadPackage();
  const dir = scratchDir('amn-forget-keep-split-');
  const fixtures = join(root, 'fixtures/gguf_ftype');
  const input = join(fixtures, 'tiny-tied-split-00001-of-00003.gguf');
  const names = [1, 2, 3].map((k) => `q4-0000${k}-of-00003.gguf`);
  const outs = {};
  for (const cli of ['native', 'node']) {
    mkdirSync(join(dir, cli));
    const out = join(dir, cli, 'q4');
    const r = run(cli, ['forget', input, '--to', 'gguf', '--scheme', 'Q4_K_M', '--keep-split', '-o', out]);
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    outs[cli] = { text: r.out.replaceAll(out, 'OUT'), files: names.map((n) => readFileSync(join(out, n))) };
  }
  assert.equal(outs.node.text, outs.native.text);
  for (let k = 0; k < 3; ++k) {
    assert.deepEqual(outs.node.files[k], outs.native.files[k], names[k]);
    // Each file alone: the tensors llama-quantize wrote into the same file.
    const want = readFileSync(join(fixtures, `tiny-tied-Q4_K_M-keep-split-0000${k + 1}-of-00003.gguf`));
    assert.deepEqual(await ggufTensors(amn, outs.native.files[k]), await ggufTensors(amn, want), names[k]);
  }
  // A file as -o is refused for a split input, by both alike.
  const native = run('native', ['forget', input, '--to', 'gguf', '--scheme', 'Q4_K_M', '--keep-split', '-o', join(dir, 'x.gguf')]);
  const node = run('node', ['forget', input, '--to', 'gguf', '--scheme', 'Q4_K_M', '--keep-split', '-o', join(dir, 'x.gguf')]);
  assert.equal(native.code, 1, native.err);  // as --split-max-size with a file name
  assert.equal(node.code, native.code);
  assert.equal(node.err, native.err);
  assert.match(native.err, /names a file: a split GGUF output is a folder/);
});

test('forget --to gguf --like G --reuse-scales: remember(G) forgotten like G is G, both CLIs and the npm API', async () => {
  const amn = await loadPackage();
  const dir = scratchDir('amn-forget-gguf-like-');
  const fixtures = join(root, 'fixtures/gguf_ftype');
  // llama-quantize's Q4_K_M of the tiny llama: Q4_K, Q6_K and F32 tensors mixed.
  const g = join(fixtures, 'tiny-Q4_K_M.gguf');
  const back = join(dir, 'back.safetensors');
  const r = run('native', ['remember', g, '--to', 'f32', '-o', back, '-q']);
  assert.equal(r.code, 0, r.err);
  const want = await ggufTensors(amn, readFileSync(g));
  assert.ok(new Set(Object.values(want).map(([type]) => type)).size >= 3, 'G mixes types');
  const outs = [];
  for (const cli of ['native', 'node']) {
    const out = join(dir, `${cli}.gguf`);
    const f = run(cli, ['forget', back, '--to', 'gguf', '--like', g, '--reuse-scales', '-o', out]);
    assert.equal(f.code, 0, `${cli}: ${f.err}`);
    assert.match(f.out, /like the GGUF reference/);
    outs.push(readFileSync(out));
  }
  assert.deepEqual(outs[1], outs[0]);
  assert.deepEqual(await ggufTensors(amn, outs[0]), want);
  // The npm API: model.forget({ to: 'gguf', like, reuseScales }).
  const model = await amn.open(back);
  const ref = await amn.open(g);
  try {
    const res = await model.forget({ to: 'gguf', like: ref, reuseScales: true });
    assert.deepEqual(Buffer.from(res.output), outs[0]);
  } finally {
    await model.close();
    await ref.close();
  }
  // Misuse: the same usage error (exit 2, one line) from both CLIs.
  const tied = join(dir, 'tied.safetensors');
  assert.equal(run('native', ['remember', join(fixtures, 'tiny-tied-Q4_K_M.gguf'), '--to', 'f32', '-o', tied, '-q']).code, 0);
  for (const [args, message] of [
    [[back, '--to', 'gguf', '--like', g, '--scheme', 'Q4_K'], /leave out --scheme/],
    [[back, '--like', g], /a GGUF reference writes GGUF/],
    [[back, '--to', 'gguf', '--like', g, '--pure'], /leave out --pure/],
    [[tied, '--to', 'gguf', '--like', g, '--reuse-scales'], /the reference has '[^']+', which the input lacks/],
  ]) {
    const native = run('native', ['forget', ...args, '-o', join(dir, 'x.gguf')]);
    const node = run('node', ['forget', ...args, '-o', join(dir, 'x.gguf')]);
    assert.equal(native.code, 2, `${args.join(' ')}: ${native.err}`);
    assert.match(native.err.split('\n')[0], message);
    assert.equal(node.code, 2, args.join(' '));
    assert.equal(node.err, native.err);
  }
});
