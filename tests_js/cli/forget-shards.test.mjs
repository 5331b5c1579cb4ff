// Sharded output of forget, and GGUF splits of convert and forget, from both CLIs (native
// `amn` and npm/bin/amn.js): a sharded input gives a sharded folder (the input's
// boundaries, the index, config.json), --max-shard-size keeps a weight's companions in its
// shard, --split-max-size / --split-max-tensors write gguf-split's files, and both CLIs
// write the same bytes and say the same lines.
//   node --test tests_js/cli/forget-shards.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from '../support/helpers.js';
import { ggufForgetInput } from '../support/gguf_input.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = process.env.AMN_NATIVE || join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/bin/amn.js');
const SHARDED = join(root, 'fixtures/models/tiny-sharded');
const INDEX = 'model.safetensors.index.json';

function run(cli, args) {
  const r = cli === 'native'
    ? spawnSync(AMN, args, { encoding: 'utf8' })
    : spawnSync(process.execPath, [NODE_AMN, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// name -> bytes, by plain JSON.parse of a safetensors header.
function tensorsOf(path) {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name !== '__metadata__') out.set(name, buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]));
  }
  return out;
}

// "<w>.weight" for a weight's companions (absmax, quant_map, nested_*, quant_state), else the name.
const weightOf = (name) => (name.includes('.weight.') ? name.slice(0, name.indexOf('.weight.') + 7) : name);

test('forget of a sharded model: a folder sharded like the input, its index and config.json', () => {
  const dir = scratchDir('amn-forget-shards-');
  const single = join(dir, 'one.safetensors');
  assert.equal(run('native', ['forget', SHARDED, '--scheme', 'nf4', '-o', single, '-q']).code, 0);
  const want = tensorsOf(single);
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
      for (const [name, bytes] of tensorsOf(join(out, file))) {
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
    [['convert', input, '--to', 'gguf', '--max-shard-size', '1G'], '--split-max-size or --split-max-tensors'],
    [['forget', input, '--scheme', 'nf4', '--max-shard-size', '1G', '-o', join(dir, 'y.safetensors')], 'names a file'],
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
