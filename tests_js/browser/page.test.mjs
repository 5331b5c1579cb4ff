// The web page in Debian's chromium: open by file picker, by URL and as a sharded set;
// the summary and tensor table (filter, sort); conversion downloads the bytes the
// fixtures' producer computed; cancel; the error panel for every broken fixture; and no
// console errors anywhere.
//   node --test tests_js/browser/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, sha256, tempDir } from '../support/helpers.js';
import { makeSafetensors, writeSparseSafetensors } from '../support/safetensors.js';
import { parseSafetensors, settled, shapeText, startHarness, tableRows } from './harness.js';

const TINY = join(FIXTURES, 'models', 'tiny-mlp');
const SHARDED = join(FIXTURES, 'models', 'tiny-sharded');
const BROKEN = join(FIXTURES, 'safetensors', 'broken');
const SCREENSHOT = '/tmp/anamnesis-page.png';
const FLOATS = new Set(['F16', 'BF16', 'F32', 'F64']);
const integer = (n) => new Intl.NumberFormat('en-US').format(n);

let harness;
const expected = {};

before(async () => {
  expected.tiny = JSON.parse(await readFile(join(FIXTURES, 'models', 'expected', 'tiny-mlp.json'), 'utf8'));
  expected.sharded = JSON.parse(await readFile(join(FIXTURES, 'models', 'expected', 'tiny-sharded.json'), 'utf8'));
  expected.broken = JSON.parse(await readFile(join(BROKEN, 'manifest.json'), 'utf8'));
  harness = await startHarness();
});

after(async () => {
  await harness?.close();
});

function assertTableMatches(rows, tensors) {
  assert.deepEqual(
    rows.map((r) => [r.name, r.dtype, r.shape, r.parameters]),
    tensors.map((t) => [t.name, t.dtype, shapeText(t.shape), integer(t.parameters)]),
  );
}

test('opens a model from the file picker: summary and tensor table', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(TINY, 'model.safetensors'));
    assert.equal(await settled(page), 'model');
    const info = expected.tiny;
    assertTableMatches(await tableRows(page), info.tensors);
    assert.equal(await page.textContent('#tensor-count'), `${info.tensors.length} tensors`);

    const facts = await page.$$eval('#summary dl.facts > div', (divs) => Object.fromEntries(
      divs.map((d) => [d.querySelector('dt').textContent, { text: d.querySelector('dd').textContent, title: d.querySelector('dd').title }])));
    assert.equal(facts.Format.text, 'safetensors');
    assert.equal(facts.Tensors.text, String(info.tensors.length));
    assert.equal(facts.Parameters.title, `${integer(info.parameters)} parameters`);
    assert.equal(facts['Tensor bytes'].title, `${integer(info.total_bytes)} bytes`);
    assert.equal(facts.Files.title, `${integer(info.file_bytes)} bytes`);
    const dtypes = await page.$$eval('#summary .dtype-row th', (ths) => ths.map((th) => th.textContent).sort());
    assert.deepEqual(dtypes, [...new Set(info.tensors.map((x) => x.dtype))].sort());
    assert.match(await page.textContent('#summary'), /Metadata\s*formatpt/);

    // Every form control has an accessible name.
    const unlabelled = await page.$$eval('input, select, button', (els) => els
      .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
      .map((el) => el.outerHTML));
    assert.deepEqual(unlabelled, []);
  });
});

test('filters and sorts the tensor table', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(TINY, 'model.safetensors'));
    assert.equal(await settled(page), 'model');
    const all = expected.tiny.tensors;
    const names = async () => (await tableRows(page)).map((r) => r.name);

    await page.fill('#tensor-filter', 'fc1');
    assert.deepEqual(await names(), all.filter((x) => x.name.includes('fc1')).map((x) => x.name));
    assert.equal(await page.textContent('#tensor-count'), `2 of ${all.length} tensors`);
    // Terms match the name or the dtype, and all must match.
    await page.fill('#tensor-filter', 'bf16');
    assert.deepEqual(await names(), all.filter((x) => x.dtype === 'BF16').map((x) => x.name));
    await page.fill('#tensor-filter', 'layers weight F32');
    assert.deepEqual(await names(), all.filter((x) => x.name.includes('layers') && x.name.includes('weight') && x.dtype === 'F32').map((x) => x.name));
    await page.fill('#tensor-filter', 'no such tensor');
    assert.deepEqual(await names(), []);
    await page.fill('#tensor-filter', '');
    assert.equal((await names()).length, all.length);

    const byName = all.map((x) => x.name).sort();
    await page.click('th[data-key="name"] button');
    assert.deepEqual(await names(), byName);
    assert.equal(await page.getAttribute('th[data-key="name"]', 'aria-sort'), 'ascending');
    await page.click('th[data-key="name"] button');
    assert.deepEqual(await names(), [...byName].reverse());
    assert.equal(await page.getAttribute('th[data-key="name"]', 'aria-sort'), 'descending');

    // Numeric, stable (ties keep file order), and the other header resets.
    await page.click('th[data-key="parameters"] button');
    const byParams = all.map((x, i) => [x, i]).sort((a, b) => a[0].parameters - b[0].parameters || a[1] - b[1]).map(([x]) => x.name);
    assert.deepEqual(await names(), byParams);
    assert.equal(await page.getAttribute('th[data-key="name"]', 'aria-sort'), 'none');
    await page.click('th[data-key="nbytes"] button');
    await page.click('th[data-key="nbytes"] button');
    const bytes = (await tableRows(page)).map((r) => all.find((x) => x.name === r.name).nbytes);
    assert.deepEqual(bytes, [...bytes].sort((a, b) => b - a));

    // Sorting applies to the filtered view.
    await page.fill('#tensor-filter', 'bias');
    assert.deepEqual(await names(), all.filter((x) => x.name.includes('bias'))
      .sort((a, b) => b.nbytes - a.nbytes).map((x) => x.name));
  });
});

for (const dtype of ['bf16', 'f16']) {
  test(`converts to ${dtype} and downloads the producer's bytes`, { timeout: 60_000 }, async (t) => {
    const dir = await tempDir(t, 'amn-web-download-');
    await harness.withPage(t, async (page) => {
      await page.setInputFiles('#file-input', join(TINY, 'model.safetensors'));
      assert.equal(await settled(page), 'model');
      await page.selectOption('#convert-dtype', dtype);
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
      assert.equal(download.suggestedFilename(), `model-${dtype}.safetensors`);
      const path = join(dir, download.suggestedFilename());
      await download.saveAs(path);
      await page.waitForSelector('#activity', { state: 'hidden' });
      assert.match(await page.textContent('#convert-result'), new RegExp(`model-${dtype}\\.safetensors .* is ready`));
      assert.equal(await page.isEnabled('#convert-button'), true);

      const { header, data } = parseSafetensors(new Uint8Array(await readFile(path)));
      const tensors = expected.tiny.tensors;
      assert.deepEqual(Object.keys(header).sort(), tensors.map((x) => x.name).sort());
      for (const x of tensors) {
        const out = header[x.name];
        const cast = FLOATS.has(x.dtype);
        assert.equal(out.dtype, cast ? dtype.toUpperCase() : x.dtype, x.name);
        assert.deepEqual(out.shape, x.shape, x.name);
        const bytes = data.subarray(out.data_offsets[0], out.data_offsets[1]);
        assert.equal(sha256(bytes), cast ? x.cast_sha256[dtype] : x.sha256, `${x.name} bytes`);
      }
      if (dtype === 'bf16') await page.screenshot({ path: SCREENSHOT, fullPage: true });
    });
  });
}

test('opens a model by URL, reading it with Range requests', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    const path = '/fixtures/models/tiny-mlp/model.safetensors';
    await page.fill('#url-input', new URL(path, harness.url).href);
    await page.click('#url-open');
    assert.equal(await settled(page), 'model');
    assertTableMatches(await tableRows(page), expected.tiny.tensors);
    const gets = harness.server.log.filter((e) => e.path === path && e.method === 'GET');
    assert.ok(gets.length > 0, 'the page fetched the file');
    assert.ok(gets.every((e) => e.range && e.status === 206), `only ranged reads: ${JSON.stringify(gets)}`);
  });
});

test('opens a sharded model with its index and config.json from several files', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    const info = expected.sharded;
    const files = [...info.files.map((f) => f.name), info.index, 'config.json'].map((n) => join(SHARDED, n));
    await page.setInputFiles('#file-input', files);
    assert.equal(await settled(page), 'model');
    assert.deepEqual((await tableRows(page)).map((r) => r.name).sort(), info.tensors.map((x) => x.name).sort());
    const summary = await page.textContent('#summary');
    assert.equal(await page.textContent('#summary dl.facts dd'), 'safetensors, sharded');
    assert.equal(await page.getAttribute('#summary dl.facts dd', 'title'), `through ${info.index}`);
    // The index and config.json are files of the model too.
    const listed = await page.$$eval('#summary .file-name', (els) => els.map((e) => e.textContent));
    assert.deepEqual(listed.filter((n) => n.endsWith('.safetensors')), info.files.map((f) => f.name));
    assert.ok(listed.includes(info.index) && listed.includes('config.json'), listed.join(', '));
    const config = JSON.parse(await readFile(join(SHARDED, 'config.json'), 'utf8'));
    assert.match(summary, new RegExp(`model_type${config.model_type}`));
    assert.match(summary, /Full config\.json/);
  });
});

test('opens a model folder from the folder picker', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#folder-input', SHARDED);
    assert.equal(await settled(page), 'model');
    assert.equal(await page.textContent('#tensor-count'), `${expected.sharded.tensors.length} tensors`);
    assert.equal(await page.textContent('#summary dl.facts dd'), 'safetensors, sharded');
  });
});

test('renders only the visible rows of a model with thousands of tensors', { timeout: 60_000 }, async (t) => {
  const dir = await tempDir(t, 'amn-web-many-');
  const path = join(dir, 'many.safetensors');
  const tensors = Array.from({ length: 6000 }, (_, i) => ({
    name: `model.layers.${String(Math.floor(i / 8)).padStart(3, '0')}.w${i % 8}.weight`, dtype: i % 2 ? 'BF16' : 'F32', shape: [4, (i % 13) + 1],
  }));
  await writeSparseSafetensors(path, tensors);
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', path);
    assert.equal(await settled(page), 'model');
    assert.equal(await page.textContent('#tensor-count'), '6,000 tensors');
    const rendered = await page.$$eval('#tensor-body tr.tensor-row', (rows) => rows.length);
    assert.ok(rendered > 10 && rendered < 200, `${rendered} rows in the DOM`);
    // Scrolled to the end, the last tensor is there, and the table is as tall as all rows.
    await page.$eval('#tensor-scroll', (el) => { el.scrollTop = el.scrollHeight; });
    await page.waitForFunction((name) => [...document.querySelectorAll('#tensor-body tr.tensor-row')]
      .some((tr) => tr.dataset.name === name), tensors.at(-1).name);
    const rowHeight = await page.$eval('#tensor-body tr.tensor-row', (tr) => tr.offsetHeight);
    const bodyHeight = await page.$eval('#tensor-body', (el) => el.offsetHeight);
    assert.ok(Math.abs(bodyHeight - rowHeight * tensors.length) <= rowHeight, `${bodyHeight} vs ${rowHeight} x ${tensors.length}`);
    await page.fill('#tensor-filter', 'layers.700.');
    assert.deepEqual((await tableRows(page)).map((r) => r.name), tensors.slice(5600, 5608).map((x) => x.name));
  });
});

test('shows the error code for every broken fixture', { timeout: 120_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    const wrong = [];
    for (const entry of expected.broken) {
      await page.setInputFiles('#file-input', join(BROKEN, entry.file));
      if (await settled(page) !== 'error') {
        wrong.push(`${entry.file}: opened, expected ${entry.code}`);
        continue;
      }
      const code = await page.getAttribute('#error-panel', 'data-code');
      assert.equal(await page.textContent('#error-code'), code, entry.file);
      assert.ok((await page.textContent('#error-message')).length > 0, entry.file);
      assert.equal(await page.isVisible('#model-view'), false, entry.file);
      if (code !== entry.code) wrong.push(`${entry.file}: ${code}, expected ${entry.code} (${await page.textContent('#error-message')})`);
    }
    assert.deepEqual(wrong, [], 'every broken file shows its code');
    // A good file afterwards clears the panel.
    await page.setInputFiles('#file-input', join(TINY, 'model.safetensors'));
    assert.equal(await settled(page), 'model');
    assert.equal(await page.isVisible('#error-panel'), false);
  });
});

test('opens a GGUF file: header KVs and block types; dequantizes them as ggml does', { timeout: 60_000 }, async (t) => {
  const want = JSON.parse(await readFile(join(FIXTURES, 'gguf', 'expected', 'ggml_blocks.json'), 'utf8'));
  const dir = await tempDir(t, 'amn-web-gguf-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(FIXTURES, 'gguf', 'valid', 'ggml_blocks.gguf'));
    assert.equal(await settled(page), 'model');
    const rows = await tableRows(page);
    assert.deepEqual(rows.map((r) => r.name), want.tensors.map((x) => x.name));
    assert.ok(rows.some((r) => r.dtype === 'Q4_K') && rows.some((r) => r.dtype === 'IQ2_XXS'), 'block types by name');
    const summary = await page.textContent('#summary');
    assert.match(summary, /GGUF header/);
    assert.match(summary, /v3, little-endian, alignment 32/);
    assert.match(summary, /general\.name/);

    await page.selectOption('#convert-dtype', 'f32');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
    const path = join(dir, download.suggestedFilename());
    await download.saveAs(path);
    const { header, data } = parseSafetensors(new Uint8Array(await readFile(path)));
    for (const x of want.tensors) {
      const out = header[x.name];
      assert.equal(out.dtype, 'F32', x.name);
      assert.equal(sha256(data.subarray(out.data_offsets[0], out.data_offsets[1])), x.f32_sha256, `${x.name} differs from ggml`);
    }
  });
});

test('a GGUF tensor of unknown type: listed, and converting says why not', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(FIXTURES, 'gguf', 'valid', 'unknown_type.gguf'));
    assert.equal(await settled(page), 'model');
    assert.ok((await tableRows(page)).some((r) => r.dtype === 'type 99'));
    await page.click('#convert-button');
    await page.waitForSelector('#error-panel', { state: 'visible' });
    assert.equal(await page.textContent('#error-code'), 'unsupported');
    assert.match(await page.textContent('#error-message'), /cannot decode/);
  });
});

test('cancels a conversion: nothing is downloaded', { timeout: 120_000 }, async (t) => {
  const dir = await tempDir(t, 'amn-web-big-');
  const big = join(dir, 'big.safetensors');
  // 256 MiB of F32 (a sparse file: no disk cost); converting takes many 16 MiB pieces.
  await writeSparseSafetensors(big, [{ name: 'w', dtype: 'F32', shape: [8192, 8192] }]);
  await harness.withPage(t, async (page) => {
    let downloads = 0;
    page.on('download', () => { downloads += 1; });
    await page.setInputFiles('#file-input', big);
    assert.equal(await settled(page), 'model');
    await page.click('#convert-button');
    await page.waitForFunction(() => document.getElementById('activity-progress').value > 0);
    await page.click('#activity-cancel');
    await page.waitForSelector('#activity', { state: 'hidden' });
    assert.match(await page.textContent('#convert-result'), /cancelled/);
    assert.equal(await page.isVisible('#error-panel'), false);
    assert.equal(await page.isEnabled('#convert-button'), true);
    assert.equal(downloads, 0);
  });
});

test('saves straight to disk through the File System Access API', { timeout: 60_000 }, async (t) => {
  // The save picker is replaced by a handle in the origin-private file system: the same
  // FileSystemFileHandle type, written by the worker through createWritable().
  const initScript = () => {
    window.showSaveFilePicker = async ({ suggestedName }) => {
      const root = await navigator.storage.getDirectory();
      window.savedAs = suggestedName;
      return root.getFileHandle(suggestedName, { create: true });
    };
  };
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(TINY, 'model.safetensors'));
    assert.equal(await settled(page), 'model');
    assert.equal(await page.isVisible('#save-direct'), true);
    await page.check('#save-direct');
    let downloads = 0;
    page.on('download', () => { downloads += 1; });
    await page.click('#convert-button');
    await page.waitForSelector('#convert-result:not([hidden])');
    assert.equal(await page.textContent('#convert-result'), 'Saved model-converted.safetensors.');
    const bytes = await page.evaluate(async () => {
      const root = await navigator.storage.getDirectory();
      const file = await (await root.getFileHandle(window.savedAs)).getFile();
      return [...new Uint8Array(await file.arrayBuffer())];
    });
    assert.equal(downloads, 0);
    // The default ("kept as stored"): every tensor as stored.
    const { header, data } = parseSafetensors(new Uint8Array(bytes));
    for (const x of expected.tiny.tensors) {
      const out = header[x.name];
      assert.equal(out.dtype, x.dtype, x.name);
      assert.equal(sha256(data.subarray(out.data_offsets[0], out.data_offsets[1])), x.sha256, x.name);
    }
  }, { initScript });
});

test('opens files dropped on the page', { timeout: 60_000 }, async (t) => {
  const bytes = [...await readFile(join(TINY, 'model.safetensors'))];
  await harness.withPage(t, async (page) => {
    await page.evaluate((data) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(data)], 'model.safetensors'));
      const target = document.getElementById('drop-zone');
      for (const type of ['dragenter', 'dragover', 'drop']) {
        target.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
      }
    }, bytes);
    assert.equal(await settled(page), 'model');
    assertTableMatches(await tableRows(page), expected.tiny.tensors);
    assert.equal(await page.$eval('#drop-zone', (el) => el.classList.contains('dragging')), false);
  });
});

test('keeps working offline once loaded', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    // The worker loads the core at start-up, not at the first open.
    const wasm = page.waitForEvent('requestfinished', (r) => r.url().endsWith('.wasm'));
    await page.goto(harness.url);
    await wasm;
    await harness.context.setOffline(true);
    t.after(() => harness.context.setOffline(false));
    await page.setInputFiles('#file-input', join(TINY, 'model.safetensors'));
    assert.equal(await settled(page), 'model');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
    assert.equal(download.suggestedFilename(), 'model-converted.safetensors');
  }, { go: false });
});

// Issue 18, item 6: nothing loses precision unless asked. An F16 model converts to F16 by
// default (the page once defaulted to "as BF16").
test('the default keeps every dtype: an F16 model downloads as F16, byte for byte', { timeout: 60_000 }, async (t) => {
  const dir = await tempDir(t, 'amn-web-keep-');
  const values = new Uint16Array([0x3c00, 0xc000, 0x3555, 0x0001, 0x7bff, 0x8400]);  // F16 bits, some not BF16-exact
  const f16 = new Uint8Array(values.buffer);
  const f32 = new Uint8Array(new Float32Array([0.1]).buffer);
  const input = join(dir, 'half.safetensors');
  await writeFile(input, makeSafetensors([{ name: 'w', dtype: 'F16', shape: [2, 3], data: f16 },
    { name: 'n', dtype: 'F32', shape: [1], data: f32 }]));
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', input);
    assert.equal(await settled(page), 'model');
    assert.equal(await page.inputValue('#convert-dtype'), 'keep');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
    assert.equal(download.suggestedFilename(), 'half-converted.safetensors');
    const path = join(dir, 'out.safetensors');
    await download.saveAs(path);
    const { header, data } = parseSafetensors(new Uint8Array(await readFile(path)));
    assert.equal(header.w.dtype, 'F16');
    assert.deepEqual([...data.subarray(header.w.data_offsets[0], header.w.data_offsets[1])], [...f16]);
    assert.equal(header.n.dtype, 'F32');
    assert.deepEqual([...data.subarray(header.n.data_offsets[0], header.n.data_offsets[1])], [...f32]);
  });
});
