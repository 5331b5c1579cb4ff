// The native `amn` as a process: exit codes, error lines, output safety, and that the
// native CLI, the Node CLI (npm/bin/amn.js, WASM) print identical bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync, readdirSync, copyFileSync, statSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scratchDir } from '../support/helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/dist/amn.cjs');
const fx = (p) => join(root, 'fixtures', p);
const TINY = fx('models/tiny-mlp/model.safetensors');
const SHARDED = fx('models/tiny-sharded');

function amn(args, opts = {}) {
  const r = spawnSync(AMN, args, { encoding: opts.encoding ?? 'utf8', ...opts });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
function nodeAmn(args) {
  const r = spawnSync(process.execPath, [NODE_AMN, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
const tmp = () => scratchDir('amn-cli-');  // removed when this file's process exits

// Tensor bytes of a safetensors file, by name (an independent reader: plain JSON.parse).
function tensorsOf(path) {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    out[name] = { dtype: t.dtype, shape: t.shape, bytes: buf.subarray(8 + n + t.data_offsets[0], 8 + n + t.data_offsets[1]) };
  }
  return { header, tensors: out };
}

test('the binary exists (build it with `make native`)', () => {
  assert.ok(existsSync(AMN), `${AMN} is missing`);
});

test('--version and --help exit 0; usage errors exit 2', () => {
  const v = amn(['--version']);
  assert.equal(v.code, 0);
  assert.match(v.out, /^amn \d+\.\d+\.\d+ \(kernels: \w+\)/);
  assert.equal(amn(['--help']).code, 0);
  assert.match(amn(['--help']).out, /inspect/);
  assert.equal(amn([]).code, 2);
  assert.equal(amn(['inspect']).code, 2);
  assert.equal(amn(['inspect', TINY, '--bogus']).code, 2);
  assert.equal(amn(['remember', TINY, '--to', 'q4']).code, 2);
});

test('errors are one line with a stable code and exit 1', () => {
  const r = amn(['inspect', '/nonexistent/model.safetensors']);
  assert.equal(r.code, 1);
  assert.match(r.err, /^amn: error \[io\]: .+\n$/);
  const dir = tmp();
  writeFileSync(join(dir, 'bad.safetensors'), Buffer.from([1, 2, 3]));
  const b = amn(['inspect', join(dir, 'bad.safetensors')]);
  assert.equal(b.code, 1);
  assert.match(b.err, /^amn: error \[parse\]: safetensors: file is 3 bytes, shorter than 8 bytes/);
});

test('a URL: the native amn says it reads local files and where URLs are read; the help says the same', () => {
  const r = amn(['inspect', 'https://example.org/model.safetensors']);
  assert.equal(r.code, 1);
  assert.equal(r.err, 'amn: error [unsupported]: cannot open https://example.org/model.safetensors: '
    + 'amn reads local files; npx amn and the npm package read http(s) URLs\n');
  assert.match(amn(['--help']).out, /npx amn \(Node\) also reads an http\(s\) URL/);
});

test('every broken fixture is rejected with its code and message', () => {
  const manifest = JSON.parse(readFileSync(fx('safetensors/broken/manifest.json'), 'utf8'));
  const entries = Array.isArray(manifest) ? manifest : manifest.files ?? Object.values(manifest);
  assert.ok(entries.length >= 15, 'expected at least 15 broken fixtures');
  for (const e of entries) {
    const r = amn(['inspect', fx(`safetensors/broken/${e.file}`)]);
    assert.equal(r.code, 1, `${e.file} should fail`);
    assert.match(r.err, new RegExp(`^amn: error \\[${e.code}\\]: `), `${e.file}: ${r.err}`);
    assert.ok(r.err.toLowerCase().includes(e.contains.toLowerCase()), `${e.file}: "${r.err.trim()}" lacks "${e.contains}"`);
  }
});

test('inspect prints the summary and every tensor; info is an alias', () => {
  const r = amn(['inspect', TINY]);
  assert.equal(r.code, 0, r.err);
  const info = JSON.parse(amn(['inspect', TINY, '--json']).out);
  assert.match(r.out, /^format\s+safetensors/m);
  for (const t of info.tensors) assert.ok(r.out.includes(t.name), `table lacks ${t.name}`);
  assert.equal(amn(['info', TINY]).out, r.out);
  assert.match(amn(['parse', TINY]).out, /offset/);
});

test('--json is the documented schema', () => {
  const info = JSON.parse(amn(['inspect', TINY, '--json']).out);
  for (const k of ['amn_info_version', 'format', 'sharded', 'files', 'metadata', 'config', 'tensors', 'parameters', 'total_bytes', 'file_bytes', 'dtypes']) {
    assert.ok(k in info, `missing ${k}`);
  }
  assert.equal(info.format, 'safetensors');
  assert.notEqual(info.config, null, 'the sibling config.json is read');
  const t = info.tensors[0];
  for (const k of ['name', 'dtype', 'shape', 'parameters', 'file', 'offset', 'data_offsets', 'nbytes']) assert.ok(k in t, `tensor lacks ${k}`);
  assert.equal(info.parameters, info.tensors.reduce((a, t) => a + t.parameters, 0));
  assert.equal(info.total_bytes, info.tensors.reduce((a, t) => a + t.nbytes, 0));
  assert.equal(amn(['parse', TINY, '--json']).out, amn(['inspect', TINY, '--json']).out);
});

test('a sharded folder and its index open as one model', () => {
  const viaDir = JSON.parse(amn(['inspect', SHARDED, '--json']).out);
  const viaIndex = JSON.parse(amn(['inspect', join(SHARDED, 'model.safetensors.index.json'), '--json']).out);
  assert.equal(viaDir.sharded, true);
  assert.equal(viaDir.index, 'model.safetensors.index.json');
  assert.deepEqual(viaDir.tensors, viaIndex.tensors);
  assert.ok(new Set(viaDir.tensors.map((t) => t.file)).size >= 3);
});

test('remember writes <stem>-remembered.safetensors (lossless) atomically and refuses to overwrite', () => {
  const dir = tmp();
  const input = join(dir, 'model.safetensors');
  copyFileSync(TINY, input);
  const before = readFileSync(input);
  const r = amn(['remember', input]);
  assert.equal(r.code, 0, r.err);
  // tiny-mlp holds BF16 and F32: a lossless copy of a safetensors file is named -remembered.
  const out = join(dir, 'model-remembered.safetensors');
  assert.ok(existsSync(out));
  assert.deepEqual(readFileSync(input), before, 'the input is untouched');
  const written = readFileSync(out);
  const again = amn(['remember', input]);
  assert.equal(again.code, 1);
  assert.match(again.err, /^amn: error \[exists\]: /);
  assert.deepEqual(readFileSync(out), written);
  assert.equal(amn(['remember', input, '--force', '-q']).code, 0);
  const refuse = amn(['convert', input, '--to', 'safetensors', '-o', input, '--force']);
  assert.equal(refuse.code, 1);
  assert.match(refuse.err, /input/);
  assert.deepEqual(readFileSync(input), before);
  assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith('.amn-tmp')), []);
  // The output is a valid safetensors file holding every tensor as stored, byte for byte.
  const src = tensorsOf(input), dst = tensorsOf(out);
  assert.ok(new Set(Object.values(src.tensors).map((t) => t.dtype)).size >= 3, 'BF16, F32 and I64');
  for (const [name, t] of Object.entries(src.tensors)) {
    assert.equal(dst.tensors[name].dtype, t.dtype, name);
    assert.deepEqual(dst.tensors[name].shape, t.shape);
    assert.deepEqual(dst.tensors[name].bytes, t.bytes, name);
  }
  assert.equal(amn(['inspect', out]).code, 0);
  // --to bf16: <stem>-bf16, floats BF16 and the rest unchanged.
  assert.equal(amn(['remember', input, '--to', 'bf16', '-q']).code, 0);
  const bf16 = tensorsOf(join(dir, 'model-bf16.safetensors'));
  for (const [name, t] of Object.entries(src.tensors)) {
    const isFloat = ['F16', 'BF16', 'F32', 'F64'].includes(t.dtype);
    assert.equal(bf16.tensors[name].dtype, isFloat ? 'BF16' : t.dtype, name);
    assert.deepEqual(bf16.tensors[name].shape, t.shape);
    if (!isFloat || t.dtype === 'BF16') assert.deepEqual(bf16.tensors[name].bytes, t.bytes, name);
  }
});

test('a failing conversion leaves nothing behind', () => {
  const dir = tmp();
  writeFileSync(join(dir, 'bad.safetensors'), readFileSync(fx('safetensors/broken/' + readdirSync(fx('safetensors/broken')).find((n) => n.endsWith('.safetensors')))));
  const r = amn(['remember', join(dir, 'bad.safetensors')]);
  assert.equal(r.code, 1);
  assert.deepEqual(readdirSync(dir), ['bad.safetensors']);
});

test('convert without --dtype is lossless', () => {
  const dir = tmp();
  const out = join(dir, 'copy.safetensors');
  assert.equal(amn(['convert', TINY, '--to', 'safetensors', '-o', out]).code, 0);
  const src = tensorsOf(TINY), dst = tensorsOf(out);
  assert.deepEqual(Object.keys(dst.tensors).sort(), Object.keys(src.tensors).sort());
  for (const [name, t] of Object.entries(src.tensors)) {
    assert.equal(dst.tensors[name].dtype, t.dtype);
    assert.deepEqual(dst.tensors[name].bytes, t.bytes, name);
  }
  assert.deepEqual(dst.header.__metadata__, src.header.__metadata__);
});

// Every valid fixture: native and WASM (through the Node CLI) print identical JSON and
// human output, and write identical bytes.
test('native and WASM agree byte for byte on every valid fixture', () => {
  const valid = readdirSync(fx('safetensors/valid')).filter((n) => n.endsWith('.safetensors')).map((n) => fx(`safetensors/valid/${n}`));
  const inputs = [...valid, TINY, SHARDED];
  assert.ok(valid.length >= 5);
  const dir = tmp();
  for (const input of inputs) {
    for (const verb of [['inspect', '--json'], ['inspect'], ['parse']]) {
      const a = amn([verb[0], input, ...verb.slice(1)]);
      const b = nodeAmn([verb[0], input, ...verb.slice(1)]);
      assert.equal(a.code, 0, `${input}: ${a.err}`);
      assert.equal(b.code, 0, `${input} (node): ${b.err}`);
      assert.equal(b.out, a.out, `${verb.join(' ')} ${input}`);
    }
    for (const dtype of ['bf16', 'f16', 'f32']) {
      const outA = join(dir, `a-${dtype}.safetensors`), outB = join(dir, `b-${dtype}.safetensors`);
      assert.equal(amn(['remember', input, '--to', dtype, '-o', outA, '--force', '-q']).code, 0);
      const b = nodeAmn(['remember', input, '--to', dtype, '-o', outB, '--force', '-q']);
      assert.equal(b.code, 0, b.err);
      assert.ok(readFileSync(outA).equals(readFileSync(outB)), `${input} --to ${dtype}: native and WASM bytes differ`);
    }
  }
});

// The aarch64 build (NEON kernels, run under qemu) writes the same bytes as x86-64.
test('aarch64 under qemu agrees with x86-64 byte for byte', () => {
  const ARM = join(root, 'build/aarch64/amn');
  assert.ok(existsSync(ARM), `${ARM} is missing (make aarch64)`);
  const inputs = ['float_f32', 'float_f64', 'f16_all_bits', 'bf16_all_bits', 'cast_tails', 'all_dtypes']
    .map((n) => fx(`safetensors/valid/${n}.safetensors`)).concat([TINY, fx('gguf/valid/ggml_blocks.gguf')]);
  const dir = tmp();
  for (const input of inputs) {
    const json = spawnSync('qemu-aarch64', [ARM, 'inspect', input, '--json'], { encoding: 'utf8' });
    assert.equal(json.status, 0, json.stderr);
    assert.equal(json.stdout, amn(['inspect', input, '--json']).out);
    for (const dtype of ['bf16', 'f16', 'f32']) {
      const a = join(dir, `x86-${dtype}.safetensors`), b = join(dir, `arm-${dtype}.safetensors`);
      assert.equal(amn(['remember', input, '--to', dtype, '-o', a, '--force', '-q']).code, 0);
      const r = spawnSync('qemu-aarch64', [ARM, 'remember', input, '--to', dtype, '-o', b, '--force', '-q'], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.ok(readFileSync(a).equals(readFileSync(b)), `${input} --to ${dtype}: aarch64 and x86-64 bytes differ`);
    }
  }
});

// Another reader of the format accepts what we write: @huggingface/hub's parser.
test('our output is readable by @huggingface/hub\'s safetensors parser', async () => {
  const { parseSafetensorsMetadata } = await import('@huggingface/hub');
  const dir = tmp();
  const out = join(dir, 'out.safetensors');
  assert.equal(amn(['remember', TINY, '--to', 'bf16', '-o', out]).code, 0);
  const bytes = readFileSync(out);
  const fetchFile = async (url, init = {}) => {
    const m = /bytes=(\d+)-(\d+)?/.exec(new Headers(init.headers).get('Range') ?? '');
    const start = m ? Number(m[1]) : 0, end = m && m[2] ? Math.min(Number(m[2]) + 1, bytes.length) : bytes.length;
    return new Response(bytes.subarray(start, end), { status: m ? 206 : 200, headers: {
      'Content-Range': `bytes ${start}-${end - 1}/${bytes.length}`, 'Content-Length': String(end - start), ETag: '"x"' } });
  };
  const parsed = await parseSafetensorsMetadata({ repo: 'local/model', path: 'out.safetensors', fetch: fetchFile });
  const ours = JSON.parse(amn(['inspect', out, '--json']).out);
  assert.equal(Object.keys(parsed.header).filter((k) => k !== '__metadata__').length, ours.tensors.length);
  for (const t of ours.tensors) {
    assert.equal(parsed.header[t.name].dtype, t.dtype);
    assert.deepEqual(parsed.header[t.name].shape, t.shape);
  }
});

// GGUF: every valid fixture inspects identically natively and in WASM; gguf-py's reader
// (fixtures/gguf/expected) agrees on every tensor; split shards open as one model.
test('GGUF files inspect the same natively and in WASM, and as gguf-py reads them', () => {
  const dir = fx('gguf/valid');
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.gguf'))) {
    const input = join(dir, name);
    for (const verb of [['inspect', '--json'], ['inspect'], ['parse']]) {
      const a = amn([verb[0], input, ...verb.slice(1)]);
      const b = nodeAmn([verb[0], input, ...verb.slice(1)]);
      assert.equal(a.code, 0, `${name}: ${a.err}`);
      assert.equal(b.out, a.out, `${verb.join(' ')} ${name}`);
    }
    const info = JSON.parse(amn(['inspect', input, '--json']).out);
    const want = JSON.parse(readFileSync(fx(`gguf/expected/${name.replace('.gguf', '.json')}`), 'utf8'));
    assert.equal(info.format, 'gguf');
    // A split model's header facts are its first shard's.
    const head = info.sharded ? JSON.parse(readFileSync(fx(`gguf/expected/${info.files.find((f) => /-00001-of-/.test(f.name)).name.replace('.gguf', '.json')}`), 'utf8')) : want;
    assert.equal(info.details.version, head.version);
    assert.equal(info.details.alignment, head.alignment);
    assert.deepEqual(Object.keys(info.details.kv), head.kv.map((kv) => kv.key));
    const own = info.tensors.filter((t) => t.file === 0);
    assert.deepEqual(own.map((t) => [t.name, t.dtype, t.shape, t.offset]),
      want.tensors.map((t, i) => [t.name,
        // gguf-py names no unknown or removed id; ours are "type <id>" and ggml's old names
        t.type_name ?? (t.type >= 43 ? `type ${t.type}` : own[i].dtype),
        [...t.ne].reverse(), want.data_offset + t.offset]));
  }
  const split = JSON.parse(amn(['inspect', fx('gguf/valid/tiny-00002-of-00003.gguf'), '--json']).out);
  assert.equal(split.sharded, true);
  assert.equal(split.files.length, 3);
});

test('GGUF: plain tensors convert; block types dequantize bit-exact with ggml; unknown types are refused', () => {
  const dir = tmp();
  const out = join(dir, 'v2.safetensors');
  assert.equal(amn(['remember', fx('gguf/valid/v2.gguf'), '--to', 'f32', '-o', out]).code, 0);
  const src = JSON.parse(amn(['inspect', fx('gguf/valid/v2.gguf'), '--json']).out);
  const dst = tensorsOf(out);
  for (const t of src.tensors) assert.deepEqual(dst.tensors[t.name].shape, t.shape);

  // Every block type, as ggml quantized it, against ggml's own to_float output.
  const blocks = join(dir, 'blocks.safetensors');
  assert.equal(amn(['remember', fx('gguf/valid/ggml_blocks.gguf'), '--to', 'f32', '-o', blocks]).code, 0);
  const want = JSON.parse(readFileSync(fx('gguf/expected/ggml_blocks.json'), 'utf8'));
  const got = tensorsOf(blocks).tensors;
  assert.ok(want.tensors.length >= 25);
  for (const t of want.tensors) {
    assert.equal(got[t.name].dtype, 'F32');
    assert.equal(createHash('sha256').update(got[t.name].bytes).digest('hex'), t.f32_sha256, `${t.name} differs from ggml`);
  }
  // Big-endian blocks (made by gguf-py's endian converter) give ggml's values too, and
  // converting them to (little-endian) GGUF swaps their f16 fields back.
  const beWant = JSON.parse(readFileSync(fx('gguf/expected/ggml_blocks_be.json'), 'utf8'));
  const beGguf = join(dir, 'le-again.gguf');
  assert.equal(amn(['convert', fx('gguf/valid/ggml_blocks_be.gguf'), '--to', 'gguf', '-o', beGguf]).code, 0);
  for (const source of [fx('gguf/valid/ggml_blocks_be.gguf'), beGguf]) {
    const out = join(dir, 'be.safetensors');
    assert.equal(amn(['remember', source, '--to', 'f32', '-o', out, '--force']).code, 0);
    const gotBe = tensorsOf(out).tensors;
    for (const t of beWant.tensors.filter((x) => x.f32_sha256)) {
      assert.equal(createHash('sha256').update(gotBe[t.name].bytes).digest('hex'), t.f32_sha256, `${source}: ${t.name}`);
    }
  }
  for (const n of ['be.safetensors', 'le-again.gguf']) rmSync(join(dir, n));
  // Without --dtype, convert writes block types as F32 (ggml's exact output) too.
  const lossless = join(dir, 'lossless.safetensors');
  assert.equal(amn(['convert', fx('gguf/valid/ggml_blocks.gguf'), '--to', 'safetensors', '-o', lossless]).code, 0);
  assert.ok(readFileSync(lossless).equals(readFileSync(blocks)));

  const q = amn(['remember', fx('gguf/valid/unknown_type.gguf'), '-o', join(dir, 'q.safetensors')]);
  assert.equal(q.code, 1);
  assert.match(q.err, /^amn: error \[unsupported\]: tensor '.+' is stored as .+, which anamnesis cannot decode/);
  assert.deepEqual(readdirSync(dir).sort(), ['blocks.safetensors', 'lossless.safetensors', 'v2.safetensors']);
});

test('every broken GGUF fixture is rejected with its code and message, natively and in WASM', () => {
  const manifest = JSON.parse(readFileSync(fx('gguf/broken/manifest.json'), 'utf8'));
  assert.ok(manifest.length >= 30);
  for (const e of manifest) {
    const input = fx(`gguf/broken/${e.file}`);
    for (const r of [amn(['inspect', input]), nodeAmn(['inspect', input])]) {
      assert.equal(r.code, 1, `${e.file} should fail`);
      assert.match(r.err, new RegExp(`^amn: error \\[${e.code}\\]: `), `${e.file}: ${r.err}`);
      assert.ok(r.err.toLowerCase().includes(e.contains.toLowerCase()), `${e.file}: "${r.err.trim()}" lacks "${e.contains}"`);
    }
  }
});

// GGUF output: native and WASM write the same bytes; tensor data survives a round trip;
// GGUF → GGUF with KV edits rewrites only the header and copies tensor data untouched.
test('convert --to gguf: native = WASM, round trips, KV edits copy tensor data untouched', () => {
  const dir = tmp();
  const meta = join(dir, 'meta.json');
  writeFileSync(meta, JSON.stringify({ 'general.name': 'edited', 'test.count': { type: 'UINT32', value: 7 } }));
  const cases = [
    [TINY, ['--gguf-kv', 'general.architecture=mlp']],
    [fx('gguf/valid/ggml_blocks.gguf'), ['--gguf-metadata', meta, '--gguf-kv', 'test.flag:BOOL=true']],
    [fx('gguf/valid/tensor_types.gguf'), ['--dtype', 'bf16']],
    [fx('gguf/valid/tiny-00001-of-00003.gguf'), []],
  ];
  for (const [input, extra] of cases) {
    const a = join(dir, 'a.gguf'), b = join(dir, 'b.gguf');
    const ra = amn(['convert', input, '--to', 'gguf', '-o', a, '--force', '-q', ...extra]);
    assert.equal(ra.code, 0, `${input}: ${ra.err}`);
    const rb = nodeAmn(['convert', input, '--to', 'gguf', '-o', b, '--force', '-q', ...extra]);
    assert.equal(rb.code, 0, `${input} (node): ${rb.err}`);
    assert.ok(readFileSync(a).equals(readFileSync(b)), `${input}: native and WASM GGUF bytes differ`);
    const src = JSON.parse(amn(['inspect', input, '--json']).out);
    const out = JSON.parse(amn(['inspect', a, '--json']).out);
    assert.equal(out.format, 'gguf');
    assert.equal(out.details.split, null, 'a single output file has no split KVs');
    assert.deepEqual(out.tensors.map((t) => [t.name, t.shape]), src.tensors.map((t) => [t.name, t.shape]));
    if (!extra.includes('--dtype')) {
      // Every tensor's bytes are the input's (plain types and blocks alike).
      const srcBytes = (t) => readFileSync(join(dirname(input), src.files[t.file].name)).subarray(t.offset, t.offset + t.nbytes);
      const outBytes = readFileSync(a);
      src.tensors.forEach((t, i) => {
        const o = out.tensors[i];
        assert.equal(o.dtype, t.dtype);
        assert.ok(outBytes.subarray(o.offset, o.offset + o.nbytes).equals(srcBytes(t)), `${t.name} bytes`);
      });
    }
    if (input.endsWith('ggml_blocks.gguf')) {
      assert.deepEqual(out.details.kv['general.name'], { type: 'STRING', value: 'edited' });
      assert.deepEqual(out.details.kv['test.count'], { type: 'UINT32', value: 7 });
      assert.deepEqual(out.details.kv['test.flag'], { type: 'BOOL', value: true });
    }
  }
  // Types GGUF cannot hold, and bad KVs, are clear errors that leave nothing behind.
  const u8 = amn(['convert', fx('safetensors/valid/all_dtypes.safetensors'), '--to', 'gguf', '-o', join(dir, 'x.gguf')]);
  assert.equal(u8.code, 1);
  assert.match(u8.err, /^amn: error \[unsupported\]: tensor '.+' is .+, which GGUF has no type for/);
  const bad = amn(['convert', TINY, '--to', 'gguf', '-o', join(dir, 'y.gguf'), '--gguf-kv', 'x:UINT8=300']);
  assert.equal(bad.code, 1);
  assert.match(bad.err, /out of range for UINT8/);
  assert.deepEqual(readdirSync(dir).filter((n) => !['a.gguf', 'b.gguf', 'meta.json'].includes(n)), []);
});

test('dequantized_bytes predicts what remember writes', () => {
  const dir = tmp();
  for (const input of [TINY, fx('gguf/valid/ggml_blocks.gguf'), fx('safetensors/valid/all_dtypes.safetensors')]) {
    const info = JSON.parse(amn(['inspect', input, '--json']).out);
    for (const dtype of ['bf16', 'f16', 'f32']) {
      const out = join(dir, `${dtype}.safetensors`);
      assert.equal(amn(['remember', input, '--to', dtype, '-o', out, '--force', '-q']).code, 0);
      const written = Object.values(tensorsOf(out).tensors).reduce((n, t) => n + t.bytes.length, 0);
      assert.equal(info.dequantized_bytes[dtype], written, `${input} --to ${dtype}`);
    }
  }
});

// Something else under a .safetensors name, and a header that is not JSON: both CLIs say
// what is wrong in words (no "limit", no simdjson error names) and where.
test('a file that is not safetensors, and a header that is not JSON: parse errors in words, with the byte', () => {
  const dir = tmp();
  const text = join(dir, 'x.safetensors');
  writeFileSync(text, 'This is a README saved under the wrong name; it holds no tensors.\n');
  const header = '{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},}';
  const json = join(dir, 'y.safetensors');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(header.length));
  writeFileSync(json, Buffer.concat([prefix, Buffer.from(header), Buffer.alloc(4)]));
  for (const run of [amn, nodeAmn]) {
    const a = run(['inspect', text]);
    assert.equal(a.code, 1);
    assert.match(a.err, /^amn: error \[parse\]: .*not a safetensors file: its first 8 bytes, read as the header length, say \d+ bytes, but only 58 bytes follow them\n$/);
    const b = run(['inspect', json]);
    assert.equal(b.code, 1);
    assert.match(b.err, new RegExp(`^amn: error \\[parse\\]: .*invalid JSON in header: expected a string key, found '\\}' at byte ${8 + header.indexOf(',}') + 1}\\n$`));
    assert.doesNotMatch(a.err + b.err, /[A-Z]+_ERROR|TAPE/);
  }
});
