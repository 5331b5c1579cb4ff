// The shared fixtures (fixtures/safetensors, fixtures/models): the npm API must report
// what the canonical producers wrote, and reject every broken file with its code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, loadPackage, sha256, bytesOf, tempDir } from '../support/helpers.js';

const amn = await loadPackage();
const ST = join(FIXTURES, 'safetensors');
const readJson = (p) => JSON.parse(readFileSync(p, 'utf8'));

// info.tensors by name, with the file as a name (expected files use names).
function byName(info) {
  return new Map(info.tensors.map((t) => [t.name, { ...t, fileName: info.files[t.file].name }]));
}

function checkTensors(info, expected, label) {
  const got = byName(info);
  assert.equal(info.tensors.length, expected.tensors.length, `${label}: tensor count`);
  for (const e of expected.tensors) {
    const t = got.get(e.name);
    assert.ok(t, `${label}: tensor ${JSON.stringify(e.name)} missing`);
    const where = `${label}: ${e.name}`;
    assert.equal(t.dtype, e.dtype, where);
    assert.deepEqual(t.shape, e.shape, where);
    assert.equal(t.parameters, e.parameters, where);
    assert.deepEqual(t.data_offsets, e.data_offsets, where);
    assert.equal(t.offset, e.offset, where);
    assert.equal(t.nbytes, e.nbytes, where);
    if (e.file) assert.equal(t.fileName, e.file, where);
  }
  assert.equal(info.parameters, expected.parameters, `${label}: parameters`);
  assert.equal(info.total_bytes, expected.total_bytes, `${label}: total_bytes`);
}

// Raw bytes and every cast torch made must hash the same through tensor().
async function checkValues(model, expected, label) {
  for (const e of expected.tensors) {
    const raw = await model.tensor(e.name);
    assert.equal(sha256(bytesOf(raw.data)), e.sha256, `${label}: ${e.name} raw`);
    for (const [to, hash] of Object.entries(e.cast_sha256 || {})) {
      const cast = await model.tensor(e.name, { to });
      assert.equal(cast.dtype, to.toUpperCase(), `${label}: ${e.name} -> ${to}`);
      assert.equal(sha256(bytesOf(cast.data)), hash, `${label}: ${e.name} -> ${to}`);
    }
  }
}

const validNames = readdirSync(join(ST, 'expected')).filter((n) => n.endsWith('.json')).sort();

test('fixtures are present', () => {
  assert.ok(validNames.length > 0, `no expected files in ${join(ST, 'expected')}`);
});

for (const name of validNames) {
  test(`valid: ${name.replace(/\.json$/, '')}`, async () => {
    const expected = readJson(join(ST, 'expected', name));
    const model = await amn.open(join(ST, expected.file));
    try {
      const { info } = model;
      assert.equal(info.format, 'safetensors');
      assert.equal(info.files[0].size, expected.file_bytes);
      assert.equal(info.files[0].header_bytes, expected.data_start);
      assert.deepEqual(info.metadata, expected.metadata || {});
      checkTensors(info, expected, name);
      await checkValues(model, expected, name);
    } finally {
      await model.close();
    }
  });
}

const manifest = readJson(join(ST, 'broken', 'manifest.json'));
test('broken: every file in the manifest is rejected with its code and message', async () => {
  assert.ok(manifest.length > 0);
  const failures = [];
  for (const entry of manifest) {
    try {
      const model = await amn.open(join(ST, 'broken', entry.file));
      await model.close();
      failures.push(`${entry.file}: accepted, expected [${entry.code}] ${entry.contains}`);
    } catch (err) {
      if (err?.name !== 'AmnError') failures.push(`${entry.file}: not an AmnError: ${err?.stack || err}`);
      else if (err.code !== entry.code || !err.message.toLowerCase().includes(entry.contains)) {
        failures.push(`${entry.file}: got [${err.code}] ${err.message}; expected [${entry.code}] …${entry.contains}…`);
      }
    }
  }
  assert.deepEqual(failures, []);
});

// ---- models ----

const MODELS = {
  'tiny-mlp': ['model.safetensors'],
  'tiny-sharded': ['model.safetensors.index.json', ''],  // '' = the folder itself
};

function checkModelInfo(info, expected, label) {
  for (const f of expected.files) {
    const got = info.files.find((x) => x.name === f.name);
    assert.ok(got, `${label}: file ${f.name} missing`);
    assert.equal(got.size, f.size, `${label}: ${f.name} size`);
    assert.equal(got.header_bytes, f.header_len + 8, `${label}: ${f.name} header_bytes`);
  }
  assert.equal(info.index, expected.index, `${label}: index`);
  assert.equal(info.sharded, expected.index !== null, `${label}: sharded`);
  assert.deepEqual(info.metadata, expected.metadata || {}, `${label}: metadata`);
  assert.ok(info.config && typeof info.config === 'object', `${label}: config.json is read`);
  // expected.file_bytes counts the tensor files; info.file_bytes every file opened.
  const tensorFileBytes = info.files.filter((f) => f.name.endsWith('.safetensors')).reduce((s, f) => s + f.size, 0);
  assert.equal(tensorFileBytes, expected.file_bytes, `${label}: bytes of tensor files`);
  assert.equal(info.file_bytes, info.files.reduce((s, f) => s + f.size, 0), `${label}: file_bytes`);
  checkTensors(info, expected, label);
}

for (const [modelName, entries] of Object.entries(MODELS)) {
  const expected = readJson(join(FIXTURES, 'models', 'expected', `${modelName}.json`));
  for (const entry of entries) {
    test(`model ${modelName}: open ${entry || 'folder'}, info and values`, async () => {
      const model = await amn.open(join(FIXTURES, 'models', modelName, entry));
      try {
        checkModelInfo(model.info, expected, modelName);
        await checkValues(model, expected, modelName);
      } finally {
        await model.close();
      }
    });
  }

  test(`model ${modelName}: convert to bf16 via a path and a WritableStream`, async (t) => {
    const dir = await tempDir(t);
    const model = await amn.open(join(FIXTURES, 'models', modelName, entries[0]));
    t.after(() => model.close());
    const path = join(dir, `${modelName}-bf16.safetensors`);
    await model.convert({ dtype: 'bf16', sink: path });
    const chunks = [];
    await model.convert({ dtype: 'bf16', sink: new WritableStream({ write(c) { chunks.push(Buffer.from(c)); } }) });
    assert.equal(sha256(Buffer.concat(chunks)), sha256(readFileSync(path)));

    const out = await amn.open(path);
    t.after(() => out.close());
    assert.equal(out.info.tensors.length, expected.tensors.length);
    for (const e of expected.tensors) {
      const got = await out.tensor(e.name);
      const want = e.cast_sha256 ? e.cast_sha256.bf16 : e.sha256;
      assert.equal(got.dtype, e.cast_sha256 ? 'BF16' : e.dtype, e.name);
      assert.deepEqual(got.shape, e.shape, e.name);
      assert.equal(sha256(bytesOf(got.data)), want, `${e.name} after convert`);
    }
  });
}
