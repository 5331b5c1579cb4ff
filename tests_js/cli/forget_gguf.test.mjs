// `amn forget --to gguf` as a process, native and Node: the same file and the same lines
// from both CLIs, the weight's blocks exactly ggml_quantize_chunk's (fixtures/ggml_quant),
// and misuse refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from '../support/helpers.js';
import { ggufForgetInput, ggmlBlocks, ggufTensors } from '../support/gguf_input.js';
import { loadPackage } from '../support/helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/bin/amn.js');

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
  const iq = run('native', ['forget', input, '--to', 'gguf', '--scheme', 'IQ2_XXS']);
  assert.equal(iq.code, 1);
  assert.match(iq.err, /importance matrix/);
});

test('forget --to gguf with llama-quantize\'s file types and options: its tensors, from both CLIs', async () => {
  const amn = await loadPackage();
  const dir = scratchDir('amn-forget-ftype-');
  const fixtures = join(root, 'fixtures/gguf_ftype');
  const input = join(fixtures, 'tiny_llama_f16.gguf');
  for (const [fixture, args] of [
    ['tiny-Q5_K_M.gguf', ['--scheme', 'Q5_K_M']],
    ['tiny-Q4_K_M-embd_q8_0-out_q5_k.gguf', ['--scheme', 'q4_k_m', '--token-embedding-type', 'q8_0', '--output-tensor-type', 'Q5_K']],
    ['tiny-Q3_K_L-leave_output.gguf', ['--scheme', 'Q3_K_L', '--leave-output-tensor']],
  ]) {
    const want = await ggufTensors(amn, readFileSync(join(fixtures, fixture)));
    const outs = [];
    for (const cli of ['native', 'node']) {
      const out = join(dir, `${cli}-${fixture}`);
      const r = run(cli, ['forget', input, '--to', 'gguf', ...args, '-q', '-o', out]);
      assert.equal(r.code, 0, `${cli}: ${r.err}`);
      outs.push(readFileSync(out));
    }
    assert.deepEqual(outs[1], outs[0], fixture);
    assert.deepEqual(await ggufTensors(amn, outs[0]), want, fixture);
  }
});
