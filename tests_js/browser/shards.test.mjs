// The page converts a sharded model to every shard + the index: downloaded one by one,
// or saved into a folder through the File System Access API (showDirectoryPicker,
// stubbed with an origin-private folder), the same bytes as the npm API writes in Node.
//   node --test tests_js/browser/shards.test.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, loadPackage, tempDir } from '../support/helpers.js';
import { settled, startHarness } from './harness.js';

const SHARDED = join(FIXTURES, 'models', 'tiny-sharded');
const INDEX = 'model.safetensors.index.json';
let harness;
let want;  // file name -> bytes, from the npm API in Node

before(async () => {
  const amn = await loadPackage();
  const model = await amn.open(SHARDED);
  try {
    const r = await model.convert({ dtype: 'f16', openShard: () => null });
    want = Object.fromEntries(r.files.map((f) => [f.name, Buffer.from(f.output)]));
  } finally {
    await model.close();
  }
  assert.deepEqual(Object.keys(want).sort(), ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors', INDEX]);
  harness = await startHarness();
});

after(async () => {
  await harness?.close();
});

test('a sharded model downloads every shard and the index', { timeout: 60_000 }, async (t) => {
  const dir = await tempDir(t, 'amn-web-shards-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#folder-input', SHARDED);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#convert-dtype', 'f16');
    const downloads = [];
    page.on('download', (d) => downloads.push(d));
    await page.click('#convert-button');
    await page.waitForSelector('#convert-result:not([hidden])');
    for (let i = 0; i < 50 && downloads.length < 4; i++) await page.waitForTimeout(100);
    assert.deepEqual(downloads.map((d) => d.suggestedFilename()).sort(), Object.keys(want).sort());
    for (const d of downloads) {
      const path = join(dir, d.suggestedFilename());
      await d.saveAs(path);
      assert.ok((await readFile(path)).equals(want[d.suggestedFilename()]), `${d.suggestedFilename()}: bytes differ from the npm API's`);
    }
    assert.match(await page.textContent('#convert-result'), /^3 shards and the index \(.*\) are ready: model-00001-of-00003\.safetensors, /);
    assert.equal(await page.isEnabled('#convert-button'), true);
  });
});

test('a sharded model saves into a folder chosen with showDirectoryPicker', { timeout: 60_000 }, async (t) => {
  // The picker is replaced by a folder in the origin-private file system: the same
  // FileSystemDirectoryHandle type, written by the worker through createWritable().
  const initScript = () => {
    window.showDirectoryPicker = async () => (await navigator.storage.getDirectory()).getDirectoryHandle('amn-out', { create: true });
  };
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#folder-input', SHARDED);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#convert-dtype', 'f16');
    await page.check('#save-direct');
    let downloads = 0;
    page.on('download', () => { downloads += 1; });
    await page.click('#convert-button');
    await page.waitForSelector('#convert-result:not([hidden])');
    assert.equal(await page.textContent('#convert-result'), 'Saved 3 shards and the index to amn-out.');
    const saved = await page.evaluate(async () => {
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('amn-out');
      const out = {};
      for await (const [name, handle] of dir.entries()) out[name] = [...new Uint8Array(await (await handle.getFile()).arrayBuffer())];
      return out;
    });
    assert.equal(downloads, 0);
    assert.deepEqual(Object.keys(saved).sort(), Object.keys(want).sort());
    for (const [name, bytes] of Object.entries(saved)) assert.ok(Buffer.from(bytes).equals(want[name]), `${name}: bytes differ`);
  }, { initScript });
});

test('a conversion that fails in its second shard leaves the chosen folder as it was', { timeout: 60_000 }, async (t) => {
  // Shard 2 holds an NVFP4 weight whose global scale is inf: data, so it fails only when
  // its piece runs, after shard 1 is written.
  const { copyFile, mkdir, writeFile } = await import('node:fs/promises');
  const { makeSafetensors, f32Bytes } = await import('../support/safetensors.js');
  const model = join(await tempDir(t, 'amn-web-bad-shards-'), 'bad-model');
  await mkdir(model);
  const bad = join(FIXTURES, 'quantized', 'bad', 'nvfp4_global_inf.safetensors');
  await writeFile(join(model, 'model-00001-of-00002.safetensors'),
    makeSafetensors([{ name: 'a.weight', dtype: 'F32', shape: [4], data: f32Bytes([1, 2, 3, 4]) }], { format: 'pt' }));
  await copyFile(bad, join(model, 'model-00002-of-00002.safetensors'));
  await copyFile(join(FIXTURES, 'quantized', 'bad', 'nvfp4_global_inf.config.json'), join(model, 'config.json'));
  const map = { 'a.weight': 'model-00001-of-00002.safetensors' };
  for (const name of ['input_scale', 'weight', 'weight_scale', 'weight_scale_2']) map[`model.layers.0.mlp.down_proj.${name}`] = 'model-00002-of-00002.safetensors';
  await writeFile(join(model, INDEX), JSON.stringify({ metadata: { total_size: 0 }, weight_map: map }));
  const initScript = () => {
    window.showDirectoryPicker = async () => {
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('amn-bad', { create: true });
      // A file of the user's that is there before: it must stay as it was.
      const mine = await (await dir.getFileHandle('model-00001-of-00002.safetensors', { create: true })).createWritable();
      await mine.write('mine');
      await mine.close();
      return dir;
    };
  };
  const { page, problems } = await harness.newPage({ initScript });
  t.after(() => page.close());
  await page.setInputFiles('#folder-input', model);
  assert.equal(await settled(page), 'model');
  await page.check('#save-direct');
  await page.click('#convert-button');
  await page.waitForSelector('#error-panel:not([hidden])');
  assert.match(await page.textContent('#error-panel'), /weight_scale_2 is inf/);
  const left = await page.evaluate(async () => {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('amn-bad');
    const out = {};
    for await (const [name, handle] of dir.entries()) out[name] = await (await handle.getFile()).text();
    return out;
  });
  assert.deepEqual(left, { 'model-00001-of-00002.safetensors': 'mine' });
  assert.deepEqual(problems, []);
});

test('forget of a sharded model downloads its shards, the index and config.json', { timeout: 90_000 }, async (t) => {
  const amn = await loadPackage();
  const model = await amn.open(SHARDED);
  let forgotten;
  try {
    const r = await model.forget({ scheme: 'nf4', openShard: () => null });
    forgotten = Object.fromEntries(r.files.map((f) => [f.name, Buffer.from(f.output)]));
  } finally {
    await model.close();
  }
  assert.deepEqual(Object.keys(forgotten).sort(), ['config.json', 'model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors',
    'model-00003-of-00003.safetensors', INDEX]);
  const dir = await tempDir(t, 'amn-web-forget-shards-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#folder-input', SHARDED);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'nf4');
    const downloads = [];
    const all = new Promise((resolve) => page.on('download', (d) => {
      downloads.push(d);
      if (downloads.length === 5) resolve();
    }));
    await page.click('#forget-button');
    await page.waitForSelector('#forget-result:not([hidden])');
    await all;
    assert.deepEqual(downloads.map((d) => d.suggestedFilename()).sort(), Object.keys(forgotten).sort());
    for (const d of downloads) {
      const path = join(dir, d.suggestedFilename());
      await d.saveAs(path);
      assert.ok((await readFile(path)).equals(forgotten[d.suggestedFilename()]), `${d.suggestedFilename()}: bytes differ from the npm API's`);
    }
    assert.match(await page.textContent('#forget-result'), /^3 shards and the index and config\.json \(.*\) are ready: /);
    assert.ok(await page.isVisible('#lethe'), 'the Lethe table is shown');
  });
});
