// Sharded output from both CLIs (native `amn` and npm/bin/amn.js): a sharded input gives
// a folder of shards with the input's boundaries and a Hugging Face index; the shards
// hold the single-file conversion's bytes; --max-shard-size follows huggingface_hub's
// rule; the folder appears whole or not at all.
//   node --test tests_js/cli/shards.test.mjs   (AMN_NATIVE=path/to/amn to test another build)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeSafetensors, f32Bytes } from '../support/safetensors.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = process.env.AMN_NATIVE || join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/dist/amn.cjs');
const fx = (p) => join(root, 'fixtures', p);
const INDEX = 'model.safetensors.index.json';

const CLIS = {
  native: (args) => spawnSync(AMN, args, { encoding: 'utf8' }),
  node: (args) => spawnSync(process.execPath, [NODE_AMN, ...args], { encoding: 'utf8' }),
};
const run = (cli, args) => {
  const r = CLIS[cli](args);
  return { code: r.status, out: r.stdout, err: r.stderr };
};
function tmp(t) {
  const dir = mkdtempSync(join(tmpdir(), 'amn-shards-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// An independent reader: plain JSON.parse of the header, tensors in file order.
function readSafetensors(path) {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const tensors = [];
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    tensors.push({ name, dtype: t.dtype, shape: t.shape, bytes: buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]) });
  }
  return tensors;
}

// The input's file of each tensor, by the input's own index.
function inputShards(dir, indexName) {
  const { weight_map: map } = JSON.parse(readFileSync(join(dir, indexName), 'utf8'));
  const files = [...new Set(Object.values(map))].sort();
  return files.map((f) => Object.keys(map).filter((k) => map[k] === f).sort());
}

// Checks a sharded output folder against the single-file conversion: the index, the
// names, the shard of every tensor and its bytes. Returns the folder's files.
function checkFolder(folder, single, expectedShards) {
  const files = readdirSync(folder).sort();
  const n = expectedShards.length;
  const names = expectedShards.map((_, k) => `model-${String(k + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`);
  assert.deepEqual(files, [...names, INDEX].sort(), folder);
  const index = JSON.parse(readFileSync(join(folder, INDEX), 'utf8'));
  assert.deepEqual(Object.keys(index), ['metadata', 'weight_map']);
  const want = new Map(readSafetensors(single).map((t) => [t.name, t]));
  let total = 0;
  const seen = new Set();
  names.forEach((name, k) => {
    const tensors = readSafetensors(join(folder, name));
    assert.deepEqual(tensors.map((t) => t.name).sort(), [...expectedShards[k]].sort(), `${name}: its tensors`);
    for (const t of tensors) {
      const w = want.get(t.name);
      assert.ok(w, `${t.name} is in the single-file conversion`);
      assert.equal(t.dtype, w.dtype, t.name);
      assert.deepEqual(t.shape, w.shape, t.name);
      assert.ok(t.bytes.equals(w.bytes), `${t.name}: bytes differ from the single-file conversion`);
      assert.equal(index.weight_map[t.name], name, `${t.name} in the index`);
      total += t.bytes.length;
      seen.add(t.name);
    }
  });
  assert.equal(seen.size, want.size, 'every tensor is in one shard');
  assert.equal(Object.keys(index.weight_map).length, want.size);
  assert.equal(index.metadata.total_size, total, 'total_size is the sum of tensor bytes');
  // json.dumps(index, indent=2, sort_keys=True) + "\n", as transformers writes it.
  const sorted = { metadata: index.metadata, weight_map: Object.fromEntries(Object.entries(index.weight_map).sort(([a], [b]) => (a < b ? -1 : 1))) };
  assert.equal(readFileSync(join(folder, INDEX), 'utf8'), `${JSON.stringify(sorted, null, 2)}\n`);
  return files;
}

// `name`: remember's default output folder (lossless): tiny-sharded holds BF16 and F32
// (-remembered); the PyTorch checkpoint's folder cannot be an input (no suffix).
const INPUTS = [
  { label: 'safetensors folder', dir: fx('models/tiny-sharded'), entry: '', index: INDEX, name: 'tiny-sharded-remembered' },
  { label: 'safetensors index', dir: fx('models/tiny-sharded'), entry: INDEX, index: INDEX, name: 'model-remembered' },
  { label: 'pytorch_model.bin index', dir: fx('torch/sharded'), entry: 'pytorch_model.bin.index.json', index: 'pytorch_model.bin.index.json', name: 'pytorch_model' },
];

for (const input of INPUTS) {
  test(`${input.label}: both CLIs write the input's shards + index, the single-file bytes`, (t) => {
    const dir = tmp(t);
    const copy = join(dir, basename(input.dir));
    cpSync(input.dir, copy, { recursive: true });
    const path = input.entry ? join(copy, input.entry) : copy;
    const single = join(dir, 'single.safetensors');
    assert.equal(run('native', ['remember', path, '--shards', '1', '-o', single, '-q']).code, 0);
    // The default target: beside the input (beside a folder, not in it).
    const target = input.entry ? join(copy, input.name) : join(dir, input.name);
    const outputs = {};
    for (const cli of ['native', 'node']) {
      const r = run(cli, ['remember', path]);
      assert.equal(r.code, 0, `${cli}: ${r.err}`);
      const n = inputShards(copy, input.index).length;
      assert.match(r.out, new RegExp(`^wrote ${target.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/ \\(${n} shards, \\d+ tensors, .*\\)\\n$`), cli);
      outputs[cli] = { out: r.out, files: checkFolder(target, single, inputShards(copy, input.index)) };
      outputs[cli].bytes = outputs[cli].files.map((f) => readFileSync(join(target, f)));
      // The output re-opens as one model with every tensor.
      const info = JSON.parse(run('native', ['inspect', target, '--json']).out);
      assert.equal(info.sharded, true);
      assert.equal(info.index, INDEX);
      rmSync(target, { recursive: true });
    }
    assert.equal(outputs.node.out, outputs.native.out, 'the CLIs print the same line');
    outputs.native.bytes.forEach((b, i) => assert.ok(b.equals(outputs.node.bytes[i]), `${outputs.native.files[i]}: native and Node differ`));
    // -o NAME.safetensors (or --shards 1) keeps writing one file.
    const one = join(dir, 'one.safetensors');
    assert.equal(run('node', ['remember', path, '-o', one, '-q']).code, 0);
    assert.ok(readFileSync(one).equals(readFileSync(single)));
  });
}

// huggingface_hub's split_state_dict_into_shards_factory, as a reference.
function hfShards(tensors, max) {
  const out = [];
  let current = [];
  let size = 0;
  for (const t of tensors) {
    const n = t.bytes.length;
    if (n > max) { out.push([t.name]); continue; }
    if (size + n > max) { out.push(current); current = []; size = 0; }
    current.push(t.name);
    size += n;
  }
  if (current.length) out.push(current);
  return out;
}

test('--max-shard-size re-shards as huggingface_hub does, from a sharded or a single file', (t) => {
  const dir = tmp(t);
  const single = join(dir, 'single.safetensors');
  const sharded = fx('models/tiny-sharded');
  assert.equal(run('native', ['remember', sharded, '--to', 'f32', '--shards', '1', '-o', single, '-q']).code, 0);
  const tensors = readSafetensors(single);
  for (const [size, bytes] of [['20KB', 20000], ['9KiB', 9216], ['40000', 40000]]) {
    const want = hfShards(tensors, bytes);
    assert.ok(want.length > 1, `${size} gives several shards`);
    for (const cli of ['native', 'node']) {
      const out = join(dir, `${cli}-${size}`);
      const r = run(cli, ['remember', sharded, '--to', 'f32', '--max-shard-size', size, '-o', out]);
      assert.equal(r.code, 0, `${cli}: ${r.err}`);
      checkFolder(out, single, want);
    }
  }
  // One shard: model.safetensors alone, no index (transformers' unsharded layout).
  const big = join(dir, 'big');
  assert.equal(run('native', ['remember', join(dir, 'single.safetensors'), '--max-shard-size', '5GB', '-o', big, '-q']).code, 0);
  assert.deepEqual(readdirSync(big), ['model.safetensors']);
});

test('refusals: an existing folder, a folder holding an input, GGUF shards, a file name for shards, a bad size', (t) => {
  const dir = tmp(t);
  const copy = join(dir, 'tiny-sharded');
  cpSync(fx('models/tiny-sharded'), copy, { recursive: true });
  const out = join(dir, 'out');
  mkdirSync(out);
  writeFileSync(join(out, 'old.txt'), 'old');
  const cases = [
    [['remember', copy, '-o', out], 'exists', `${out} already exists (use --force to replace it)`],
    [['remember', copy, '-o', copy, '--force'], 'invalid_argument', `${copy} holds an input of this conversion`],
    [['remember', copy, '-o', dir, '--force'], 'invalid_argument', `${dir} holds an input of this conversion`],
    [['convert', copy, '--to', 'gguf', '--max-shard-size', '1GB'], 'unsupported', 'sharded output is written as safetensors only'],
    [['remember', copy, '--shards', 'input', '-o', join(dir, 'x.safetensors')], 'invalid_argument', 'names a file'],
    [['remember', copy, '--shards', '1', '--max-shard-size', '1GB'], 'invalid_argument', 'contradict'],
    [['remember', copy, '--max-shard-size', '5XB', '-o', join(dir, 'y')], 'invalid_argument', "shard size '5XB' is not a size"],
  ];
  for (const [args, code, says] of cases) {
    const a = run('native', args);
    const b = run('node', args);
    assert.equal(a.code, 1, `${args.join(' ')}: ${a.err}`);
    assert.ok(a.err.startsWith(`amn: error [${code}]: `) && a.err.includes(says), `${args.join(' ')}: ${a.err}`);
    assert.equal(b.err, a.err, `${args.join(' ')}: the Node CLI says otherwise`);
  }
  assert.deepEqual(readdirSync(out), ['old.txt']);
  assert.deepEqual(readdirSync(copy).sort(), readdirSync(fx('models/tiny-sharded')).sort(), 'the input is untouched');
  // --force replaces the old folder whole.
  for (const cli of ['native', 'node']) {
    writeFileSync(join(out, 'old.txt'), 'old');
    assert.equal(run(cli, ['remember', copy, '-o', out, '--force', '-q']).code, 0, cli);
    assert.deepEqual(readdirSync(out).sort(), ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors', INDEX]);
  }
  assert.deepEqual(readdirSync(dir).sort(), ['out', 'tiny-sharded'], 'no temporary folder is left');
});

test('an error after the first shard is written leaves no folder and no temporary files', (t) => {
  // Shard 1 converts; shard 2 holds an NVFP4 weight whose global scale is inf, which is
  // data and so fails only when its piece runs.
  const dir = tmp(t);
  const model = join(dir, 'model');
  mkdirSync(model);
  const bad = fx('quantized/bad/nvfp4_global_inf.safetensors');
  writeFileSync(join(model, 'model-00001-of-00002.safetensors'),
    makeSafetensors([{ name: 'a.weight', dtype: 'F32', shape: [4], data: f32Bytes([1, 2, 3, 4]) }], { format: 'pt' }));
  copyFileSync(bad, join(model, 'model-00002-of-00002.safetensors'));
  copyFileSync(fx('quantized/bad/nvfp4_global_inf.config.json'), join(model, 'config.json'));
  const weightMap = { 'a.weight': 'model-00001-of-00002.safetensors' };
  for (const t2 of readSafetensors(bad)) weightMap[t2.name] = 'model-00002-of-00002.safetensors';
  writeFileSync(join(model, INDEX), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
  for (const cli of ['native', 'node']) {
    const r = run(cli, ['remember', model]);
    assert.equal(r.code, 1, cli);
    assert.match(r.err, /^amn: error \[parse\]: nvfp4: weight_scale_2 is inf/, cli);
    assert.deepEqual(readdirSync(dir), ['model'], `${cli}: nothing beside the input`);
  }
});
