// NumPy (.npy/.npz) and PyTorch (.pth/.pt/.bin) through the native `amn`, `npx amn` and
// the npm API in Node. Every fixture converts to safetensors holding exactly the bytes
// numpy.load / torch.load give (sha256 of each array's C-order little-endian bytes, in
// fixtures/numpy/expected.json and fixtures/torch/expected/*.json, written by the
// producers' own scripts); both CLIs print and write identical bytes; every hostile file
// is refused with its code on every surface.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { FIXTURES, ROOT, BIN, loadPackage } from '../support/helpers.js';

// AMN_NATIVE points the suite at another build folder's binary (as tests_js/cli/shards.test.mjs).
const AMN = process.env.AMN_NATIVE || join(ROOT, 'build', 'native', 'amn');
const sha256 = (b) => createHash('sha256').update(b).digest('hex');

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'buffer' });
  return { code: r.status, out: r.stdout, err: r.stderr.toString() };
}
const native = (args) => run(AMN, args);
const node = (args) => run(process.execPath, [BIN, ...args]);

function tensorsOf(bytes) {
  const buf = Buffer.from(bytes);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  delete header.__metadata__;
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    out[name] = { dtype: t.dtype, shape: t.shape, bytes: buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]) };
  }
  return out;
}

// [path, [{name, sha256}]] for every fixture the producers' scripts described.
function cases() {
  const out = [];
  for (const f of JSON.parse(readFileSync(join(FIXTURES, 'numpy', 'expected.json'), 'utf8'))) {
    out.push([join(FIXTURES, 'numpy', f.file), f.arrays.map((a) => ({ name: a.name, sha256: a.sha256 }))]);
  }
  const expected = join(FIXTURES, 'torch', 'expected');
  for (const j of readdirSync(expected)) {
    const file = j.replace(/\.json$/, '');
    const dir = file.includes('_big') ? 'big_endian' : 'valid';
    const e = JSON.parse(readFileSync(join(expected, j), 'utf8'));
    out.push([join(FIXTURES, 'torch', dir, file), e.tensors.map((x) => ({ name: x.name, sha256: x.sha256 }))]);
  }
  // A sharded checkpoint (pytorch_model.bin.index.json), opened as its folder.
  const sharded = join(FIXTURES, 'torch', 'sharded');
  const e = JSON.parse(readFileSync(join(sharded, 'expected.json'), 'utf8'));
  out.push([sharded, e.tensors.map((x) => ({ name: x.name, sha256: x.sha256 }))]);
  return out;
}

test('every NumPy and PyTorch fixture converts to the producer\'s bytes, the same from both CLIs', { timeout: 300_000 }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'amn-np-pt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const all = cases();
  assert.ok(all.length >= 50, `only ${all.length} fixtures`);
  for (const [path, want] of all) {
    const a = join(dir, `${basename(path)}.native.safetensors`);
    const b = join(dir, `${basename(path)}.node.safetensors`);
    const r = native(['convert', path, '--to', 'safetensors', '-o', a, '-q']);
    assert.equal(r.code, 0, `${path}: ${r.err}`);
    const got = tensorsOf(readFileSync(a));
    for (const x of want) {
      assert.ok(got[x.name], `${path}: ${x.name} written`);
      assert.equal(sha256(got[x.name].bytes), x.sha256, `${path}: ${x.name} differs from what the producer loads`);
    }
    const s = node(['convert', path, '--to', 'safetensors', '-o', b, '-q']);
    assert.equal(s.code, 0, `${path} (node): ${s.err}`);
    assert.ok(readFileSync(a).equals(readFileSync(b)), `${path}: native and Node outputs differ`);
    const ia = native(['inspect', path, '--json']);
    const ib = node(['inspect', path, '--json']);
    assert.ok(ia.out.equals(ib.out), `${path}: inspect --json differs between the CLIs`);
  }
});

// The native CLI copies lossless pieces kernel-side (copy_file_range). Across file systems
// Linux >= 5.19 answers EXDEV and the pieces go through pread + write instead: the output
// must be the same bytes either way.
test('native convert: the same bytes when the input is on another file system (copy_file_range fallback)', (t) => {
  if (!existsSync('/dev/shm') || statSync('/dev/shm').dev === statSync(tmpdir()).dev) {
    t.skip('no second file system here');
    return;
  }
  const shm = mkdtempSync('/dev/shm/amn-np-pt-');
  const dir = mkdtempSync(join(tmpdir(), 'amn-np-pt-'));
  t.after(() => { rmSync(shm, { recursive: true, force: true }); rmSync(dir, { recursive: true, force: true }); });
  const inputs = [join(FIXTURES, 'torch', 'valid', 'pytorch_model.bin'), join(FIXTURES, 'torch', 'valid', 'views.pt')];
  for (const src of inputs) {
    const far = join(shm, basename(src));
    copyFileSync(src, far);
    const a = join(dir, `${basename(src)}.near.safetensors`);
    const b = join(dir, `${basename(src)}.far.safetensors`);
    for (const [from, to] of [[src, a], [far, b]]) {
      const r = native(['convert', from, '--to', 'safetensors', '-o', to, '-q']);
      assert.equal(r.code, 0, `${from}: ${r.err}`);
    }
    assert.ok(readFileSync(a).equals(readFileSync(b)), `${src}: outputs differ across file systems`);
  }
});

test('the npm API: tensors by path, and by bytes with no name (the format told by content)', { timeout: 300_000 }, async () => {
  const amn = await loadPackage('node.js');
  for (const [path, want] of cases()) {
    const folder = statSync(path).isDirectory();
    for (const source of folder ? [path] : [path, new Uint8Array(readFileSync(path))]) {
      const model = await amn.open(source);
      try {
        const format = path.endsWith('.npy') ? 'npy' : path.endsWith('.npz') ? 'npz' : 'pth';
        assert.equal(model.info.format, format, path);
        for (const x of want) {
          // A standalone .npy names its array after the file: bytes with no name give "model".
          const name = format === 'npy' && typeof source !== 'string' ? 'model' : x.name;
          const t = await model.tensor(name);
          assert.equal(sha256(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)), x.sha256, `${path}: tensor(${x.name})`);
        }
      } finally {
        await model.close();
      }
    }
  }
});

test('hostile NumPy and PyTorch files: the same code and message from both CLIs and the npm API', { timeout: 300_000 }, async () => {
  const amn = await loadPackage('node.js');
  const manifests = [['numpy', 'broken'], ['torch', 'broken']];
  let count = 0;
  for (const [family, sub] of manifests) {
    const dir = join(FIXTURES, family, sub);
    for (const entry of JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'))) {
      const path = join(dir, entry.file);
      const a = native(['inspect', path]);
      const b = node(['inspect', path]);
      assert.equal(a.code, 1, `${path}: ${a.err}`);
      assert.match(a.err, new RegExp(`^amn: error \\[${entry.code}\\]: `), path);
      assert.ok(a.err.includes(entry.contains), `${path}: "${a.err.trim()}" should say "${entry.contains}"`);
      assert.equal(b.err, a.err, `${path}: the Node CLI says otherwise`);
      await assert.rejects(amn.open(path), (err) => err.code === entry.code && err.message.includes(entry.contains), path);
      count += 1;
    }
  }
  assert.ok(count >= 40, `only ${count} hostile files`);
});
