// open(): every source kind gives the same model; errors come back as AmnError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { open as openFile, readdir, readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadPackage, rejectsAborted, rejectsWith, tempDir } from '../support/helpers.js';
import { sampleBytes, sampleTensors } from '../support/sample.js';
import { makeSafetensors, writeShardedModel } from '../support/safetensors.js';
import { startRangeServer } from '../support/range-server.js';

const amn = await loadPackage();

function summary(info) {
  return info.tensors.map((t) => `${t.name} ${t.dtype} [${t.shape}] ${t.nbytes}`);
}

test('the package loads the core and reports its version', async () => {
  assert.match(await amn.version(), /^\d+\.\d+\.\d+/);
  assert.equal(typeof await amn.implementation(), 'string');
  // The package's list is the core's, in the core's order.
  const M = await amn.loadCoreForCli();
  assert.deepEqual([...amn.ERROR_CODES], JSON.parse(M.errorCodes()));
  assert.deepEqual([...amn.ERROR_CODES].sort(), ['cancelled', 'disallowed_global', 'exists', 'internal', 'invalid_argument', 'io',
    'limit', 'need_bytes', 'need_files', 'not_found', 'parse', 'unsupported']);
});

test('ArrayBuffer, Uint8Array, Blob, File, path, file: URL and FileHandle agree', async (t) => {
  const bytes = sampleBytes();
  const dir = await tempDir(t);
  const path = join(dir, 'sample.safetensors');
  await writeFile(path, bytes);
  const fh = await openFile(path, 'r');
  t.after(() => fh.close());
  const sources = {
    arrayBuffer: bytes.buffer,
    uint8array: bytes,
    blob: new Blob([bytes]),
    file: new File([bytes], 'sample.safetensors'),
    path,
    fileUrl: pathToFileURL(path),
    fileHandle: fh,
  };
  const expected = sampleTensors().map((x) => `${x.name} ${x.dtype} [${x.shape}] ${x.data.length}`);
  for (const [kind, source] of Object.entries(sources)) {
    const model = await amn.open(source);
    assert.deepEqual(summary(model.info), expected, kind);
    assert.equal(model.info.format, 'safetensors');
    assert.equal(model.info.files[0].size, bytes.length);
    assert.deepEqual(model.info.metadata, { format: 'pt' });
    assert.equal(model.info.parameters, 32 + 8 + 3 + 3 + 5 + 2 + 7);
    await model.close();
  }
});

test('names: paths and Files keep theirs, bare bytes take options.name', async (t) => {
  const bytes = sampleBytes();
  let model = await amn.open(new File([bytes], 'a.safetensors'));
  assert.equal(model.info.files[0].name, 'a.safetensors');
  await model.close();
  model = await amn.open(bytes, { name: 'b.safetensors' });
  assert.equal(model.info.files[0].name, 'b.safetensors');
  await model.close();
});

async function shardedFolder(t) {
  const dir = await tempDir(t);
  const tensors = sampleTensors();
  await writeShardedModel(dir, [tensors.slice(0, 3), tensors.slice(3, 5), tensors.slice(5)]);
  return dir;
}

function assertSharded(info, label) {
  assert.equal(info.sharded, true, label);
  assert.equal(info.index, 'model.safetensors.index.json', label);
  assert.deepEqual(info.files.map((f) => f.name).sort(), ['config.json', 'model-00001-of-00003.safetensors',
    'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors', 'model.safetensors.index.json'], label);
  assert.equal(info.files[0].name, 'model.safetensors.index.json', label);
  assert.deepEqual(info.config, { model_type: 'test', hidden_size: 4 }, label);
  assert.deepEqual(info.tensors.map((x) => x.name).sort(), sampleTensors().map((x) => x.name).sort(), label);
}

test('a folder, an index.json path and a list of Files open a sharded model', async (t) => {
  const dir = await shardedFolder(t);
  const byPath = await amn.open(join(dir, 'model.safetensors.index.json'));
  assertSharded(byPath.info, 'index path');
  const byDir = await amn.open(dir);
  assertSharded(byDir.info, 'folder');
  assert.deepEqual(byDir.info, byPath.info);
  const files = await Promise.all((await readdir(dir)).map(async (n) => new File([await readFile(join(dir, n))], n)));
  const byFiles = await amn.open(files);
  assertSharded(byFiles.info, 'files');
  assert.deepEqual(byFiles.info, byPath.info);
  for (const m of [byPath, byDir, byFiles]) await m.close();
});

test('a folder of shards without an index opens every shard', async (t) => {
  const dir = await tempDir(t);
  const tensors = sampleTensors();
  await writeFile(join(dir, 'a.safetensors'), makeSafetensors(tensors.slice(0, 2)));
  await writeFile(join(dir, 'b.safetensors'), makeSafetensors(tensors.slice(2)));
  const model = await amn.open(dir);
  assert.equal(model.info.sharded, true);
  assert.deepEqual(model.info.files.map((f) => f.name), ['a.safetensors', 'b.safetensors']);
  assert.equal(model.info.tensors.length, tensors.length);
  await model.close();
});

test('a sharded model over HTTP: index URL, shards and config.json beside it', async (t) => {
  const dir = await shardedFolder(t);
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  const local = await amn.open(dir);
  const remote = await amn.open(`${server.url}model.safetensors.index.json`);
  assertSharded(remote.info, 'url');
  assert.deepEqual(remote.info, local.info);
  await local.close();
  await remote.close();
});

test('an index URL without config.json still opens (404 is ignored)', async (t) => {
  const dir = await tempDir(t);
  await writeShardedModel(dir, [sampleTensors().slice(0, 2), sampleTensors().slice(2)], { config: null });
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  const model = await amn.open(new URL(`${server.url}model.safetensors.index.json`));
  assert.equal(model.info.config, null);
  assert.equal(model.info.files.length, 3);
  await model.close();
});

test('config: false skips the config.json probe beside an index URL', async (t) => {
  const dir = await shardedFolder(t);
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  const model = await amn.open(`${server.url}model.safetensors.index.json`, { config: false });
  assert.equal(model.info.config, null);
  assert.equal(server.stats.files['/config.json'], undefined, 'config.json was requested');
  await model.close();
});

test('quantize_config.json and quant_config.json ride along after config.json, on every source kind', async (t) => {
  const dir = await shardedFolder(t);
  const own = { bits: 4, group_size: 128, checkpoint_format: 'gptq_v2' };
  await writeFile(join(dir, 'quantize_config.json'), JSON.stringify(own));
  await writeFile(join(dir, 'quant_config.json'), JSON.stringify({ w_bit: 4, q_group_size: 128 }));
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  // The folder goes through the core's file rule; the index path, the File array and the
  // URL through the core's list (configFileNames): the same files, in the same order.
  const folder = await amn.open(dir);
  const configs = folder.info.files.map((f) => f.name).slice(-3);
  assert.deepEqual(configs, ['config.json', 'quantize_config.json', 'quant_config.json']);
  assert.deepEqual(folder.info.quantize_config, { file: 'quantize_config.json', config: own });
  const files = await Promise.all((await readdir(dir)).map(async (n) => new File([await readFile(join(dir, n))], n)));
  for (const [kind, source] of [['index path', join(dir, 'model.safetensors.index.json')], ['File array', files],
    ['index URL', `${server.url}model.safetensors.index.json`]]) {
    const model = await amn.open(source);
    assert.deepEqual(model.info, folder.info, kind);
    await model.close();
  }
  await folder.close();
});

// A file given by path looks for its config files only when needed (node-io.js
// lateConfigs): at open when the core says they could change what it finds (a quantized
// layer: the quantizer's config decides GPTQ or AWQ), else on first use. Either way the
// model is the one the eager sources (a File array) give, and the native amn.
test('a file given by path reads the config files beside it, at open or on first use', async (t) => {
  const dir = await tempDir(t);
  const own = { bits: 4, group_size: 32, checkpoint_format: 'gptq_v2' };
  const config = { model_type: 'test', hidden_size: 4 };
  const packed = (n) => new Uint8Array(n).fill(0x11);
  const scales = new Uint8Array(new Uint16Array(2 * 8).fill(0x211f).buffer);  // F16 0.01
  await writeFile(join(dir, 'plain.safetensors'), sampleBytes());
  await writeFile(join(dir, 'quant.safetensors'), makeSafetensors([
    { name: 'l.qweight', dtype: 'I32', shape: [8, 8], data: packed(8 * 8 * 4) },
    { name: 'l.qzeros', dtype: 'I32', shape: [2, 1], data: packed(2 * 4) },
    { name: 'l.scales', dtype: 'F16', shape: [2, 8], data: scales },
  ]));
  await writeFile(join(dir, 'config.json'), JSON.stringify(config));
  await writeFile(join(dir, 'quantize_config.json'), JSON.stringify(own));
  await writeFile(join(dir, 'quant_config.json'), '{not json');
  for (const name of ['plain.safetensors', 'quant.safetensors']) {
    const named = ['config.json', 'quantize_config.json', 'quant_config.json', name];
    const files = await Promise.all(named.map(async (n) => new File([await readFile(join(dir, n))], n)));
    const eager = await amn.open(files);
    const model = await amn.open(join(dir, name));
    assert.deepEqual(model.info.files.map((f) => f.name), [name, 'config.json', 'quantize_config.json', 'quant_config.json'], name);
    assert.deepEqual(model.info.config, config, name);
    assert.deepEqual(model.info.quantize_config, { file: 'quantize_config.json', config: own }, name);
    assert.deepEqual(model.info, eager.info, name);
    assert.equal(model.text(), eager.text(), name);
    await model.close();
    // text() before info: any first use reads them.
    const again = await amn.open(join(dir, name));
    assert.equal(again.text(), eager.text(), name);
    await again.close();
    await eager.close();
  }
  // Which way each took: the quantized layer's scheme needs the config at open.
  const quant = await amn.open(join(dir, 'quant.safetensors'));
  assert.equal(quant.info.logical.length, 1);
  await quant.close();
});

test('a missing shard is an io error naming it', async (t) => {
  const dir = await shardedFolder(t);
  const { rm } = await import('node:fs/promises');
  await rm(join(dir, 'model-00002-of-00003.safetensors'));
  await rejectsWith(assert, amn.open(join(dir, 'model.safetensors.index.json')), 'io', 'model-00002-of-00003.safetensors');
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  await rejectsWith(assert, amn.open(`${server.url}model.safetensors.index.json`), 'io', 'model-00002-of-00003.safetensors');
});

test('bad sources and options are invalid_argument; missing paths are io', async (t) => {
  await rejectsWith(assert, amn.open(42), 'invalid_argument');
  await rejectsWith(assert, amn.open({}), 'invalid_argument');
  await rejectsWith(assert, amn.open(sampleBytes(), { limits: { maxBogus: 1 } }), 'invalid_argument');
  await rejectsWith(assert, amn.open(sampleBytes(), { limits: { maxItemCount: -1 } }), 'invalid_argument');
  await rejectsWith(assert, amn.open('/no/such/model.safetensors'), 'io', 'no such file');
  const dir = await tempDir(t);
  await mkdir(join(dir, 'empty'));
  await rejectsWith(assert, amn.open(join(dir, 'empty')), 'io', 'no model files');
});

test('limits reach the core', async () => {
  await rejectsWith(assert, amn.open(sampleBytes(), { limits: { maxItemCount: 3 } }), 'limit');
  await rejectsWith(assert, amn.open(sampleBytes(), { limits: { max_item_count: 3 } }), 'limit');
  const model = await amn.open(sampleBytes(), { limits: { maxItemCount: 1000, maxSingleAlloc: 1 << 20 } });
  await model.close();
});

test('text(): the CLI reports', async () => {
  const model = await amn.open(sampleBytes());
  assert.match(model.text(), /^format\s+safetensors\n/);
  assert.equal(model.text('inspect'), model.text());
  assert.match(model.text('parse'), /^file\s+name\s+bytes\s+header\n/);
  assert.throws(() => model.text('bogus'), { code: 'invalid_argument' });
  await model.close();
  await model.close();  // twice is fine
  assert.throws(() => model.text(), { code: 'invalid_argument' });
  await rejectsWith(assert, model.tensor('w'), 'invalid_argument', 'closed');
  await rejectsWith(assert, model.convert(), 'invalid_argument', 'closed');
});

test('an aborted signal cancels open()', async () => {
  const controller = new AbortController();
  controller.abort();
  await rejectsAborted(assert, amn.open(sampleBytes(), { signal: controller.signal }));
});
