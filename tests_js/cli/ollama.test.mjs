// `ollama:<name>` sources on both CLIs (native build/native/amn and node npm/bin/amn.js) and
// in the npm API, against the fake Ollama store in fixtures/ollama/models (README.md there).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, symlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from '../support/helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/dist/amn.cjs');
const STORE = join(root, 'fixtures/ollama/models');
const BLOBS = join(STORE, 'blobs');
const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const tmp = () => scratchDir('amn-ollama-');

const V2 = readFileSync(join(root, 'fixtures/gguf/valid/v2.gguf'));
const TENSOR_TYPES = readFileSync(join(root, 'fixtures/gguf/valid/tensor_types.gguf'));
const TINY_BLOB = join(BLOBS, `sha256-${sha256(V2)}`);
const Q8_BLOB = join(BLOBS, `sha256-${sha256(TENSOR_TYPES)}`);

// The environment the CLIs see: OLLAMA_MODELS as given (null: unset), HOME as given.
function envWith({ models = STORE, home } = {}) {
  const env = { ...process.env };
  delete env.OLLAMA_MODELS;
  if (models !== null) env.OLLAMA_MODELS = models;
  if (home !== undefined) env.HOME = home;
  return env;
}
function run(cli, args, opts = {}) {
  const [cmd, argv] = cli === 'native' ? [AMN, args] : [process.execPath, [NODE_AMN, ...args]];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', env: envWith(opts), cwd: opts.cwd ?? root });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
const CLIS = ['native', 'node'];

test('the fake store is what the README says: blobs named by their sha256, GGUF fixtures as weights', () => {
  assert.ok(existsSync(AMN), `${AMN} is missing (build it: ninja -C build/native amn)`);
  for (const name of readdirSync(BLOBS)) {
    assert.equal(`sha256-${sha256(readFileSync(join(BLOBS, name)))}`, name);
  }
  assert.ok(existsSync(TINY_BLOB) && existsSync(Q8_BLOB));
  const manifest = JSON.parse(readFileSync(join(STORE, 'manifests/registry.ollama.ai/library/tiny/latest'), 'utf8'));
  const model = manifest.layers.filter((l) => l.mediaType === 'application/vnd.ollama.image.model');
  assert.deepEqual(model.map((l) => l.digest), [`sha256:${sha256(V2)}`]);
});

test('ollama:tiny, ollama:tiny:latest and ollama:myname/tiny:q8 inspect as their blobs do, on both CLIs', () => {
  const cases = [['ollama:tiny', TINY_BLOB], ['ollama:tiny:latest', TINY_BLOB], ['ollama:myname/tiny:q8', Q8_BLOB],
    ['ollama:registry.ollama.ai/myname/tiny:q8', Q8_BLOB], ['ollama:library/tiny', TINY_BLOB]];
  for (const [spec, blob] of cases) {
    for (const view of [['inspect', '--json'], ['inspect'], ['parse', '--json']]) {
      const direct = run('native', [view[0], blob, ...view.slice(1)]);
      assert.equal(direct.code, 0, direct.err);
      for (const cli of CLIS) {
        const r = run(cli, [view[0], spec, ...view.slice(1)]);
        assert.equal(r.code, 0, `${cli} ${spec}: ${r.err}`);
        assert.equal(r.err, '');
        // The same bytes: the entry keeps the blob's own name (sha256-<hex>).
        assert.equal(r.out, direct.out, `${cli} ${view.join(' ')} ${spec}`);
      }
    }
    const info = JSON.parse(run('native', ['inspect', spec, '--json']).out);
    assert.equal(info.format, 'gguf');
    assert.deepEqual(info.files.map((f) => f.name), [blob.split('/').pop()]);
  }
});

test('OLLAMA_MODELS may be relative (to the working folder) and is trimmed of spaces and quotes, as Ollama does', () => {
  const want = run('native', ['inspect', TINY_BLOB, '--json']).out;
  for (const models of ['fixtures/ollama/models', ` "${STORE}" `, `'${STORE}'`]) {
    for (const cli of CLIS) {
      const r = run(cli, ['inspect', 'ollama:tiny', '--json'], { models });
      assert.equal(r.code, 0, `${cli} OLLAMA_MODELS=${models}: ${r.err}`);
      assert.equal(r.out, want);
    }
  }
});

test('without OLLAMA_MODELS (unset or empty) the store is ~/.ollama/models', () => {
  const home = tmp();
  mkdirSync(join(home, '.ollama'));
  symlinkSync(STORE, join(home, '.ollama', 'models'));
  const want = run('native', ['inspect', Q8_BLOB, '--json']).out;
  for (const models of [null, '', '  ']) {
    for (const cli of CLIS) {
      const r = run(cli, ['inspect', 'ollama:myname/tiny:q8', '--json'], { models, home });
      assert.equal(r.code, 0, `${cli}: ${r.err}`);
      assert.equal(r.out, want);
    }
  }
  const miss = run('native', ['inspect', 'ollama:absent'], { models: null, home });
  assert.equal(miss.err, `amn: error [not_found]: Ollama model absent not found in ${home}/.ollama/models; run \`ollama pull absent\`\n`);
});

test('a model that is not pulled: exit 1, not_found, the `ollama pull` hint; the same line on both CLIs', () => {
  const cases = {
    'ollama:missing': `Ollama model missing not found in ${STORE}; run \`ollama pull missing\``,
    'ollama:tiny:7b': `Ollama model tiny:7b not found in ${STORE}; run \`ollama pull tiny:7b\``,
    'ollama:someone/tiny': `Ollama model someone/tiny not found in ${STORE}; run \`ollama pull someone/tiny\``,
    'ollama:gone': `the weights of Ollama model gone (blob sha256-${sha256('anamnesis: a blob that is not here\n')}) `
      + `not found in ${BLOBS}; run \`ollama pull gone\``,
  };
  for (const [spec, message] of Object.entries(cases)) {
    for (const cli of CLIS) {
      const r = run(cli, ['inspect', spec]);
      assert.equal(r.code, 1, `${cli} ${spec}`);
      assert.equal(r.out, '');
      assert.equal(r.err, `amn: error [not_found]: ${message}\n`, `${cli} ${spec}`);
    }
  }
});

test('names Ollama would refuse, path traversal among them, are rejected before any file is touched', () => {
  const names = ['', '..', '../tiny', '../../../../etc/passwd', 'tiny/..', 'library/../tiny', 'tiny:..', 'tiny:../latest',
    '/etc/passwd', '/tiny', 'registry.ollama.ai//tiny', 'a/b/c/d', 'a\\b', '..\\..\\x', 'tiny:', ':latest', 'ns/', '/',
    '.hidden', '-dash', 'tiny:la/test', 'na.me/tiny', 'tiny\0x', 'ti ny', 'tïny', 'x'.repeat(81), 'tiny:' + 't'.repeat(81)];
  for (const name of names) {
    if (name.includes('\0')) continue;  // argv cannot carry it; the parser's loop refuses it like any other byte
    const spec = `ollama:${name}`;
    const lines = CLIS.map((cli) => {
      const r = run(cli, ['inspect', spec]);
      assert.equal(r.code, 1, `${cli} ${JSON.stringify(spec)}`);
      assert.match(r.err, /^amn: error \[parse\]: invalid Ollama model name ".*": .+; expected \[host\/\]\[namespace\/\]model\[:tag\]\n$/s,
        `${cli} ${JSON.stringify(spec)}: ${r.err}`);
      return r.err;
    });
    assert.equal(lines[0], lines[1], `native and node differ for ${JSON.stringify(spec)}`);
  }
  assert.equal(run('native', ['inspect', 'ollama:../x']).err,
    'amn: error [parse]: invalid Ollama model name "../x": ".." is not allowed; expected [host/][namespace/]model[:tag]\n');
  assert.equal(run('native', ['inspect', 'ollama:a\\b']).err, 'amn: error [parse]: invalid Ollama model name "a\\b": the model "a\\b" '
    + "holds a character Ollama does not allow (letters, digits, '_', '-' and '.'); expected [host/][namespace/]model[:tag]\n");
});

test('manifests without GGUF weights, not JSON, or with a digest that is not sha256 are refused clearly', () => {
  const m = (n) => `${STORE}/manifests/registry.ollama.ai/library/${n}/latest`;
  const cases = {
    'ollama:nomodel': ['unsupported', `Ollama model nomodel has no GGUF weights (no application/vnd.ollama.image.model layer in ${m('nomodel')}): `
      + 'a cloud model, or one stored as tensor layers'],
    'ollama:broken': ['parse', `${m('broken')}: not an Ollama manifest: not valid JSON`],
    'ollama:baddigest': ['parse', `${m('baddigest')}: not an Ollama manifest: the model layer's digest "sha256:../../../etc/passwd" `
      + 'is not sha256:<64 hex digits>'],
  };
  for (const [spec, [code, message]] of Object.entries(cases)) {
    for (const cli of CLIS) {
      const r = run(cli, ['inspect', spec]);
      assert.equal(r.code, 1);
      assert.equal(r.err, `amn: error [${code}]: ${message}\n`, `${cli} ${spec}`);
    }
  }
});

test('blobs named the pre-2024 way (sha256:<hex>) are found too', () => {
  const store = join(tmp(), 'models');
  cpSync(STORE, store, { recursive: true });
  const hex = sha256(TENSOR_TYPES);
  renameSync(join(store, 'blobs', `sha256-${hex}`), join(store, 'blobs', `sha256:${hex}`));
  const direct = run('native', ['inspect', join(store, 'blobs', `sha256:${hex}`), '--json']);
  assert.equal(direct.code, 0, direct.err);
  for (const cli of CLIS) {
    const r = run(cli, ['inspect', 'ollama:myname/tiny:q8', '--json'], { models: store });
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    assert.equal(r.out, direct.out);
  }
});

test('remember writes <model>-<tag>[-<dtype>].safetensors in the working folder, never into blobs/, nor over the blob', () => {
  const store = join(tmp(), 'models');
  cpSync(STORE, store, { recursive: true });
  const blobsBefore = readdirSync(join(store, 'blobs')).sort();
  const outputs = CLIS.map((cli) => {
    const cwd = tmp();
    const r = run(cli, ['remember', 'ollama:myname/tiny:q8', '--to', 'f32'], { models: store, cwd });
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    assert.equal(r.out.split(' (')[0], 'wrote ./tiny-q8-f32.safetensors');
    assert.deepEqual(readdirSync(cwd), ['tiny-q8-f32.safetensors']);
    return readFileSync(join(cwd, 'tiny-q8-f32.safetensors'));
  });
  assert.equal(sha256(outputs[0]), sha256(outputs[1]), 'native and node outputs differ');
  const direct = join(tmp(), 'direct.safetensors');
  assert.equal(run('native', ['remember', Q8_BLOB, '--to', 'f32', '-o', direct]).code, 0);
  assert.equal(sha256(outputs[0]), sha256(readFileSync(direct)));
  // Without --to: lossless, and a GGUF input's <model>-<tag>.safetensors cannot be an input.
  const lossless = CLIS.map((cli) => {
    const cwd = tmp();
    const r = run(cli, ['remember', 'ollama:myname/tiny:q8'], { models: store, cwd });
    assert.equal(r.code, 0, `${cli}: ${r.err}`);
    assert.equal(r.out.split(' (')[0], 'wrote ./tiny-q8.safetensors');
    assert.deepEqual(readdirSync(cwd), ['tiny-q8.safetensors']);
    return readFileSync(join(cwd, 'tiny-q8.safetensors'));
  });
  assert.equal(sha256(lossless[0]), sha256(lossless[1]), 'native and node outputs differ');
  const keep = join(tmp(), 'keep.safetensors');
  assert.equal(run('native', ['convert', Q8_BLOB, '--to', 'safetensors', '-o', keep]).code, 0);
  assert.equal(sha256(lossless[0]), sha256(readFileSync(keep)), 'remember without --to is the lossless convert');
  // -o at the blob itself, even with --force: an input, refused.
  const blob = join(store, 'blobs', `sha256-${sha256(TENSOR_TYPES)}`);
  for (const cli of CLIS) {
    const r = run(cli, ['remember', 'ollama:myname/tiny:q8', '-o', blob, '--force'], { models: store });
    assert.equal(r.code, 1);
    assert.equal(r.err, `amn: error [invalid_argument]: ${blob} is an input of this conversion\n`, cli);
  }
  assert.deepEqual(readdirSync(join(store, 'blobs')).sort(), blobsBefore);
  assert.equal(sha256(readFileSync(blob)), sha256(TENSOR_TYPES));
});

test('npm API: open("ollama:…") in Node is the blob; in the browser entry it is invalid_argument', async (t) => {
  const saved = process.env.OLLAMA_MODELS;
  process.env.OLLAMA_MODELS = STORE;
  t.after(() => { if (saved === undefined) delete process.env.OLLAMA_MODELS; else process.env.OLLAMA_MODELS = saved; });
  const node = await import(join(root, 'npm/node.js'));
  const viaName = await node.open('ollama:myname/tiny:q8');
  const viaPath = await node.open(Q8_BLOB);
  assert.equal(viaName.infoJson, viaPath.infoJson);
  const name = viaName.info.tensors.find((x) => x.dtype === 'Q8_0').name;
  const [a, b] = [await viaName.tensor(name, { to: 'f32' }), await viaPath.tensor(name, { to: 'f32' })];
  assert.deepEqual(a.data, b.data);
  await viaName.close();
  await viaPath.close();
  await assert.rejects(node.open('ollama:missing'), (e) => e instanceof node.AmnError && e.code === 'not_found' && /ollama pull missing/.test(e.message));
  await assert.rejects(node.open('ollama:../tiny'), (e) => e.code === 'parse');
  const web = await import(join(root, 'npm/index.js'));
  await web.init({ wasmBinary: await readFile(join(root, 'npm/dist/amn-core.wasm')) });
  await assert.rejects(web.open('ollama:tiny'), (e) => e instanceof web.AmnError && e.code === 'invalid_argument');
});
