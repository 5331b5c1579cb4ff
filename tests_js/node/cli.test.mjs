// bin/amn.js: the native CLI's verbs, output, exit codes and output-file rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BIN, FIXTURES, ROOT, loadPackage, sha256, tempDir } from '../support/helpers.js';

const amn = await loadPackage();
const TINY = join(FIXTURES, 'models', 'tiny-mlp', 'model.safetensors');

function run(args, options = {}) {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, ...options }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

test('inspect, info and parse print the core reports; --json the info document', async () => {
  const model = await amn.open(TINY);
  const inspect = await run(['inspect', 'fixtures/models/tiny-mlp/model.safetensors']);
  assert.equal(inspect.code, 0, inspect.stderr);
  assert.equal(inspect.stdout, model.text('inspect'));
  assert.equal(inspect.stderr, '');
  assert.equal((await run(['info', TINY])).stdout, model.text('inspect'));
  assert.equal((await run(['parse', TINY])).stdout, model.text('parse'));
  const json = await run(['inspect', TINY, '--json']);
  assert.equal(json.stdout, model.infoJson);
  assert.deepEqual(JSON.parse(json.stdout), model.info);
  assert.equal((await run(['parse', '--json', TINY])).stdout, json.stdout);
  await model.close();
});

test('errors: one line on stderr, exit 1', async () => {
  const missing = await run(['inspect', '/no/such/model.safetensors']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stdout, '');
  assert.equal(missing.stderr, 'amn: error [io]: cannot open /no/such/model.safetensors: no such file or folder\n');
  const broken = await run(['inspect', join(FIXTURES, 'safetensors', 'broken', 'header_array.safetensors')]);
  assert.equal(broken.code, 1);
  assert.match(broken.stderr, /^amn: error \[parse\]: .+\n$/);
});

test('usage errors exit 2; --help and --version exit 0', async () => {
  for (const args of [[], ['frobnicate', TINY], ['inspect'], ['inspect', TINY, '--bogus'],
    ['convert', TINY], ['convert', TINY, '--to', 'onnx'], ['remember', TINY, '--to', 'q4'],
    ['inspect', TINY, TINY], ['remember', TINY, '-o']]) {
    const r = await run(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^amn: usage error: .+\nRun 'amn --help' for usage\.\n$/, args.join(' '));
  }
  const help = await run(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage: amn/);
  assert.match((await run(['inspect', '--help'])).stdout, /Usage: amn/);
  const version = await run(['--version']);
  assert.equal(version.code, 0);
  assert.match(version.stdout, /^amn \d+\.\d+\.\d+ \(kernels: \S+\)\n$/);
});

test('remember / convert: default names beside the input, refusing to overwrite', async (t) => {
  const dir = await tempDir(t);
  const input = join(dir, 'model.safetensors');
  await cp(TINY, input);
  const first = await run(['remember', input]);
  assert.equal(first.code, 0, first.stderr);
  // Lossless, and tiny-mlp holds BF16 and F32: <stem>-remembered beside the safetensors input.
  assert.match(first.stdout, new RegExp(`^wrote ${dir}/model-remembered\\.safetensors \\(11 tensors, [\\d.]+ KiB\\)\\n$`));
  const model = await amn.open(TINY);
  assert.equal(model.outputName({ verb: 'remember' }), 'model-remembered.safetensors');
  const want = await model.convert();
  assert.equal(sha256(await readFile(join(dir, 'model-remembered.safetensors'))), sha256(want));

  const again = await run(['remember', input]);
  assert.equal(again.code, 1);
  assert.equal(again.stderr, `amn: error [exists]: ${dir}/model-remembered.safetensors already exists (use --force to replace it)\n`);
  assert.equal((await run(['dequantize', input, '--force', '-q'])).stdout, '');

  assert.equal((await run(['remember', input, '--to', 'bf16'])).code, 0);
  assert.equal(sha256(await readFile(join(dir, 'model-bf16.safetensors'))), sha256(await model.convert({ dtype: 'bf16' })));
  assert.equal((await run(['remember', input, '--to', 'f16'])).code, 0);
  assert.equal((await run(['convert', input, '--to', 'safetensors'])).code, 0);
  const kept = await run(['convert', input, '--to=safetensors', '--dtype', 'f32', '-o', join(dir, 'x.safetensors')]);
  assert.equal(kept.code, 0, kept.stderr);
  assert.deepEqual((await readdir(dir)).sort(), ['model-bf16.safetensors', 'model-converted.safetensors',
    'model-f16.safetensors', 'model-remembered.safetensors', 'model.safetensors', 'x.safetensors']);
  for (const name of ['model-converted.safetensors', 'model-remembered.safetensors']) {
    const converted = await amn.open(join(dir, name));
    assert.deepEqual(converted.info.tensors.map((x) => x.dtype), model.info.tensors.map((x) => x.dtype), name);
    await converted.close();
  }
  await model.close();
});

test('an output that is one of the inputs is refused even with --force', async (t) => {
  const dir = await tempDir(t);
  const input = join(dir, 'model.safetensors');
  await cp(TINY, input);
  const before = sha256(await readFile(input));
  const r = await run(['convert', input, '--to', 'safetensors', '-o', input, '--force']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^amn: error \[invalid_argument\]: .* is an input of this conversion\n$/);
  assert.equal(sha256(await readFile(input)), before);
});

test('a folder of shards converts to a folder of shards beside it: <folder>-remembered/ (lossless, BF16 and F32)', async (t) => {
  const dir = await tempDir(t);
  const folder = join(dir, 'tiny-sharded');
  await cp(join(FIXTURES, 'models', 'tiny-sharded'), folder, { recursive: true });
  const r = await run(['remember', folder]);
  assert.equal(r.code, 0, r.stderr);
  const out = join(dir, 'tiny-sharded-remembered');
  for (const k of [1, 2, 3]) assert.ok(existsSync(join(out, `model-0000${k}-of-00003.safetensors`)), `shard ${k}`);
  assert.ok(existsSync(join(out, 'model.safetensors.index.json')));
  const [a, b] = await Promise.all([amn.open(folder), amn.open(out)]);
  assert.deepEqual(b.info.tensors.map((x) => [x.name, x.dtype]), a.info.tensors.map((x) => [x.name, x.dtype]));
  for (const x of a.info.tensors) {
    const [ta, tb] = await Promise.all([a.tensor(x.name), b.tensor(x.name)]);
    assert.equal(sha256(tb.data), sha256(ta.data), `${x.name}: as stored`);
  }
  await Promise.all([a.close(), b.close()]);
  assert.ok(!existsSync(join(folder, 'tiny-sharded-remembered.safetensors')), 'nothing written inside the input folder');
});
