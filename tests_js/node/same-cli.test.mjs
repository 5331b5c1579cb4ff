// One command line, two CLIs: the native amn and `npx amn` (bin/amn.js on the WASM core)
// print the same help, the same usage errors and the same refusals, byte for byte,
// because both take them from src/session/command_line.cpp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { BIN, FIXTURES, ROOT } from '../support/helpers.js';

const NATIVE = join(ROOT, 'build', 'native', 'amn');
const TINY = join(FIXTURES, 'models', 'tiny-mlp', 'model.safetensors');

function run(cmd, args) {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: ROOT }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
}
const both = (args) => Promise.all([run(NATIVE, args), run(process.execPath, [BIN, ...args])]);

const cases = [
  ['--help'], ['inspect', '--help'], ['remember', '--help'], ['convert', '--help'], ['parse', '-h'],
  [], ['bogus'], ['inspect'], ['inspect', TINY, '--bogus'], ['remember', TINY, '--to', 'q4'],
  ['convert', TINY], ['convert', TINY, '--to', 'gguf', '--shards', 'input'],
  ['convert', TINY, '--to', 'safetensors', '--shards', '1', '--max-shard-size', '1MB'],
  ['inspect', TINY, '--max-item-count', 'lots'], ['inspect', TINY, '--max-item-count', '1'],
  ['inspect', 'docs'],  // a folder without a model file: the registry's patterns, from the core
];

for (const args of cases) {
  test(`amn ${args.join(' ') || '(no arguments)'}: the same from both CLIs`, async () => {
    const [native, node] = await both(args);
    assert.equal(node.stdout, native.stdout);
    assert.equal(node.stderr, native.stderr);
    assert.equal(node.code, native.code);
  });
}

test('help lists every verb, the limits and the formats from the registry', async () => {
  const [native] = await both(['--help']);
  for (const word of ['parse', 'inspect', 'remember', 'convert', 'NumPy .npz', 'PyTorch', 'GGUF', 'safetensors']) {
    assert.match(native.stdout, new RegExp(word));
  }
  const [inspect] = await both(['inspect', '--help']);
  assert.match(inspect.stdout, /--max-total-bytes/);
  const [remember] = await both(['remember', '--help']);
  assert.match(remember.stdout, /--cast-all/);
});

test('a limit from the command line is applied: --max-item-count 1 refuses a 3-tensor model', async () => {
  const [native, node] = await both(['inspect', TINY, '--max-item-count', '1']);
  assert.equal(native.code, 1);
  assert.match(native.stderr, /^amn: error \[limit\]/);
  assert.equal(node.stderr, native.stderr);
});
