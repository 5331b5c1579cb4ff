// The tensor detail view and conversion to GGUF, in Debian's chromium. The statistics the
// page shows are checked against ones computed here, independently, from the npm
// package's own model.tensor(name, { to: 'f32' }); the GGUF the page downloads against
// the native CLI's bytes.
//   node --test tests_js/browser/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, ROOT, loadPackage, tempDir } from '../support/helpers.js';
import { settled, startHarness } from './harness.js';
import { summaryOf } from '../../web/src/tensor-stats.js';
import { makeSafetensors } from '../support/safetensors.js';

const TINY = join(FIXTURES, 'models', 'tiny-mlp', 'model.safetensors');
const BLOCKS = join(FIXTURES, 'gguf', 'valid', 'ggml_blocks.gguf');
const UNKNOWN = join(FIXTURES, 'gguf', 'valid', 'unknown_type.gguf');
const NATIVE = join(ROOT, 'build', 'native', 'amn');
const SCREENSHOT = '/tmp/anamnesis-detail.png';
const BINS = 64;

let harness;
let pkg;

before(async () => {
  pkg = await loadPackage('node.js');
  harness = await startHarness();
});

after(async () => {
  await harness?.close();
});

// The reference: min/max, mean and population std in two plain passes over the finite
// values, NaN and infinity counts. 64-bit integers: exact min/max as decimal strings.
function reference(data) {
  const big = typeof data[0] === 'bigint';
  let nan = 0; let posInf = 0; let negInf = 0;
  const finite = [];
  for (const v of data) {
    const x = Number(v);
    if (Number.isNaN(x)) nan += 1;
    else if (x === Infinity) posInf += 1;
    else if (x === -Infinity) negInf += 1;
    else finite.push(big ? v : x);
  }
  const nums = finite.map(Number);
  const mean = nums.reduce((a, b) => a + b, 0) / nums.length;
  const std = Math.sqrt(nums.reduce((a, x) => a + (x - mean) ** 2, 0) / nums.length);
  const min = finite.reduce((a, b) => (b < a ? b : a));
  const max = finite.reduce((a, b) => (b > a ? b : a));
  return { min: String(min), max: String(max), mean, std, nan, posInf, negInf, finite: finite.length };
}

async function expectedFor(path, name) {
  const model = await pkg.open(path);
  try {
    const t = await model.tensor(name, { to: 'f32' });
    return { ...reference(t.data), head: Array.from(t.data.subarray(0, 16), String), elements: t.data.length };
  } finally {
    await model.close();
  }
}

async function openModel(page, path) {
  await page.setInputFiles('#file-input', path);
  assert.equal(await settled(page), 'model');
}

// Opens a tensor's detail view with its row button and waits for the result (or error).
async function openDetail(page, name) {
  await page.fill('#tensor-filter', name);
  await page.click(`#tensor-body tr.tensor-row[data-name="${name}"] button.tensor-open`);
  await page.waitForSelector('#tensor-dialog[open]');
  await page.waitForFunction((n) => document.getElementById('tensor-dialog-title').textContent === n
    && !document.getElementById('tensor-detail').hasAttribute('aria-busy'), name);
}

async function closeDetail(page) {
  await page.keyboard.press('Escape');
  await page.waitForSelector('#tensor-dialog', { state: 'hidden' });
}

// What the detail view shows.
function shown(page) {
  return page.evaluate(() => {
    const detail = document.getElementById('tensor-detail');
    const stats = {};
    for (const div of detail.querySelectorAll('[data-stat]')) {
      const dd = div.querySelector('dd');
      stats[div.dataset.stat] = { text: dd.textContent, value: dd.dataset.value, title: dd.title };
    }
    const facts = Object.fromEntries([...detail.querySelectorAll('dl.detail-facts > div')]
      .map((d) => [d.querySelector('dt').textContent, d.querySelector('dd').textContent]));
    const bars = [...detail.querySelectorAll('svg.histogram rect.hist-bar')].map((r) => Number(r.dataset.count));
    const head = [...detail.querySelectorAll('.head-values code')].map((c) => c.dataset.value ?? c.textContent);
    const error = detail.querySelector('.detail-error');
    return { stats, facts, bars, head, error: error && { code: error.dataset.code, text: error.textContent } };
  });
}

const sig6 = (x) => Number(x).toPrecision(6);

function assertStats(got, want, label) {
  assert.equal(got.stats.min.value, want.min, `${label} min`);
  assert.equal(got.stats.max.value, want.max, `${label} max`);
  assert.equal(sig6(got.stats.mean.text), sig6(want.mean), `${label} mean (shown)`);
  assert.equal(sig6(got.stats.std.text), sig6(want.std), `${label} std (shown)`);
  assert.equal(sig6(got.stats.mean.value), sig6(want.mean), `${label} mean (full)`);
  assert.equal(sig6(got.stats.std.value), sig6(want.std), `${label} std (full)`);
  assert.equal(got.stats.nan.text, String(want.nan), `${label} NaN`);
  assert.equal(got.stats.posInf.text, String(want.posInf), `${label} +Inf`);
  assert.equal(got.stats.negInf.text, String(want.negInf), `${label} -Inf`);
  assert.equal(got.bars.length, BINS, `${label}: ${BINS} bars`);
  assert.equal(got.bars.reduce((a, b) => a + b, 0), want.finite, `${label}: the bars count every finite value`);
  if (want.min !== want.max) {
    assert.ok(got.bars[0] > 0 && got.bars[BINS - 1] > 0, `${label}: min in the first bar, max in the last`);
  }
  assert.deepEqual(got.head, want.head, `${label} first values`);
}

test('detail view of GGUF block types: statistics equal the package\'s tensor()', { timeout: 90_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await openModel(page, BLOCKS);
    for (const [name, dtype] of [['blk.q4_k', 'Q4_K'], ['blk.iq2_xxs', 'IQ2_XXS']]) {
      await openDetail(page, name);
      const got = await shown(page);
      const want = await expectedFor(BLOCKS, name);
      assert.equal(got.error, null, name);
      assert.equal(got.facts['Stored dtype'], dtype);
      assert.equal(got.facts.Shape, '16 × 256');
      assert.equal(got.facts.Elements, '4,096');
      assert.equal(got.facts['Values read as'], 'F32');
      assertStats(got, want, name);
      // Full precision on hover.
      assert.equal(got.stats.min.title, want.min);
      if (name === 'blk.q4_k') {
        await page.screenshot({ path: SCREENSHOT });
        // A log count axis draws the same bins.
        await page.check('#histogram-log');
        const log = await shown(page);
        assert.deepEqual(log.bars, got.bars);
        assert.match(await page.textContent('#tensor-detail svg.histogram'), /count \(log\)/);
        await page.screenshot({ path: SCREENSHOT.replace('.png', '-log.png') });
      }
      await closeDetail(page);
    }
    // Every other block type decodes too, with the same statistics as the package.
    const model = await pkg.open(BLOCKS);
    const names = model.info.tensors.map((x) => x.name);
    await model.close();
    for (const name of names) {
      await openDetail(page, name);
      assertStats(await shown(page), await expectedFor(BLOCKS, name), name);
      await closeDetail(page);
    }
  });
});

test('detail view of safetensors BF16 and I64 tensors', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await openModel(page, TINY);

    await openDetail(page, 'model.layers.0.fc2.weight');
    let got = await shown(page);
    assert.equal(got.facts['Stored dtype'], 'BF16');
    assert.equal(got.facts['Values read as'], 'F32');
    assertStats(got, await expectedFor(TINY, 'model.layers.0.fc2.weight'), 'BF16');
    await closeDetail(page);

    await openDetail(page, 'model.position_ids');
    got = await shown(page);
    const want = await expectedFor(TINY, 'model.position_ids');
    assert.equal(got.facts['Stored dtype'], 'I64');
    assert.equal(got.facts['Values read as'], 'I64');
    assert.equal(got.facts.Shape, '1 × 32');
    assertStats(got, want, 'I64');
    assert.equal(got.stats.min.text, want.min, 'integers are shown exactly');
    assert.equal(got.stats.max.text, want.max);
  });
});

test('detail view: keyboard, Escape, focus back to the row', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await openModel(page, TINY);
    // Where focus is when the dialog's 'close' event is dispatched: after the browser's own
    // focus restoration (to the element focused when showModal ran), before the page's
    // close handler (a capture listener on window runs first). Both must land on the row:
    // the page must not depend on winning against the browser.
    await page.evaluate(() => {
      window.focusAtClose = [];
      const where = () => document.activeElement?.closest('tr')?.dataset.name
        ?? `#${document.activeElement?.id || document.activeElement?.tagName}`;
      window.addEventListener('close', () => window.focusAtClose.push(where()), true);
    });
    const closed = async (n) => {
      await page.waitForSelector('#tensor-dialog', { state: 'hidden' });
      await page.waitForFunction((k) => window.focusAtClose.length === k, n);  // the close event ran
      return page.evaluate(() => window.focusAtClose.at(-1));
    };
    const selector = '#tensor-body tr.tensor-row[data-name="model.final_norm.weight"] button.tensor-open';
    assert.equal(await page.getAttribute(selector, 'aria-haspopup'), 'dialog');
    await page.focus(selector);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#tensor-dialog[open]');
    await page.waitForFunction(() => !document.getElementById('tensor-detail').hasAttribute('aria-busy'));
    // Focus moved into the dialog, which is modal and labelled by the tensor's name.
    assert.equal(await page.evaluate(() => document.getElementById('tensor-dialog').contains(document.activeElement)), true);
    assert.equal(await page.textContent('#tensor-dialog-title'), 'model.final_norm.weight');
    await page.keyboard.press('Escape');
    assert.equal(await closed(1), 'model.final_norm.weight', 'the browser restores focus to the row');
    assert.equal(await page.evaluate(() => document.activeElement?.closest('tr')?.dataset.name), 'model.final_norm.weight');

    // A click anywhere on the row opens it too; the close button closes it.
    await page.click('#tensor-body tr.tensor-row[data-name="model.final_norm.bias"] td.num');
    await page.waitForSelector('#tensor-dialog[open]');
    await page.waitForFunction(() => document.getElementById('tensor-dialog-title').textContent === 'model.final_norm.bias');
    await page.click('#tensor-dialog-close');
    assert.equal(await closed(2), 'model.final_norm.bias', 'the browser restores focus to the row, not the table');
    assert.equal(await page.evaluate(() => document.activeElement?.closest('tr')?.dataset.name), 'model.final_norm.bias');

    // Every control still has an accessible name.
    const unlabelled = await page.$$eval('input, select, button', (els) => els
      .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()))
      .map((el) => el.outerHTML));
    assert.deepEqual(unlabelled, []);
  });
});

test('detail view of a tensor of unknown type shows the unsupported code', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await openModel(page, UNKNOWN);
    await openDetail(page, 'mystery');
    const got = await shown(page);
    assert.equal(got.error?.code, 'unsupported');
    assert.match(got.error.text, /unsupported/);
    assert.match(got.error.text, /type 99/);
    assert.equal(got.bars.length, 0);
    await closeDetail(page);
    // The next tensor works.
    await openDetail(page, 'known');
    assert.equal((await shown(page)).error, null);
  });
});

for (const [label, source, stem] of [['tiny-mlp (safetensors)', TINY, 'model'], ['ggml_blocks.gguf', BLOCKS, 'ggml_blocks']]) {
  test(`converts ${label} to GGUF, keeping dtypes: the native CLI's bytes`, { timeout: 60_000 }, async (t) => {
    assert.ok(existsSync(NATIVE), `${NATIVE} is missing: build the native CLI`);
    const dir = await tempDir(t, 'amn-web-gguf-out-');
    const native = join(dir, 'native.gguf');
    execFileSync(NATIVE, ['convert', source, '--to', 'gguf', '-o', native, '-q']);
    await harness.withPage(t, async (page) => {
      await openModel(page, source);
      await page.selectOption('#convert-format', 'gguf');
      await page.selectOption('#convert-dtype', 'keep');
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
      assert.equal(download.suggestedFilename(), `${stem}-converted.gguf`);
      const path = join(dir, download.suggestedFilename());
      await download.saveAs(path);
      await page.waitForSelector('#activity', { state: 'hidden' });
      assert.match(await page.textContent('#convert-result'), new RegExp(`${stem}-converted\\.gguf .* is ready`));
      const [got, want] = [await readFile(path), await readFile(native)];
      assert.equal(got.length, want.length, 'size');
      assert.ok(got.equals(want), 'the bytes equal the native CLI\'s');
    });
  });
}

test('converts to GGUF with a dtype: named <stem>-<dtype>.gguf, native bytes', { timeout: 60_000 }, async (t) => {
  const dir = await tempDir(t, 'amn-web-gguf-f16-');
  const native = join(dir, 'native.gguf');
  execFileSync(NATIVE, ['convert', TINY, '--to', 'gguf', '--dtype', 'f16', '-o', native, '-q']);
  await harness.withPage(t, async (page) => {
    await openModel(page, TINY);
    await page.selectOption('#convert-format', 'gguf');
    await page.selectOption('#convert-dtype', 'f16');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
    assert.equal(download.suggestedFilename(), 'model-f16.gguf');
    const path = join(dir, 'page.gguf');
    await download.saveAs(path);
    assert.ok((await readFile(path)).equals(await readFile(native)), 'the bytes equal the native CLI\'s');
  });
});

// The page's summary is the core's streamed statistics (model.stats(name, { detail: true }))
// renamed: checked here in Node on values whose answers are known.
test('tensor-stats: the core\'s detail statistics: NaN and infinities apart, integers exact, raw bytes, heatmap', async () => {
  const bytes = (Type, values) => new Uint8Array(new Type(values).buffer);
  const file = makeSafetensors([
    { name: 'f', dtype: 'F32', shape: [7], data: bytes(Float32Array, [1, NaN, 3, Infinity, -Infinity, -Infinity, 2]) },
    { name: 'same', dtype: 'F32', shape: [3], data: bytes(Float32Array, [5, 5, 5]) },
    { name: 'wide', dtype: 'F32', shape: [3], data: bytes(Float32Array, [-3.4028234663852886e38, 0, 3.4028234663852886e38]) },
    { name: 'none', dtype: 'F32', shape: [2], data: bytes(Float32Array, [NaN, Infinity]) },
    { name: 'i16', dtype: 'I16', shape: [2], data: bytes(Int16Array, [-300, 7]) },
    { name: 'u64', dtype: 'U64', shape: [2], data: bytes(BigUint64Array, [2n ** 64n - 1n, 3n]) },
    { name: 'grid', dtype: 'F32', shape: [2, 3], data: bytes(Float32Array, [1, -2, NaN, 4, 5, -6]) },
  ]);
  // An F8 tensor (the test helper knows no F8 size): the header written here, padded to 8.
  const json = JSON.stringify({ x: { dtype: 'F8_E4M3', shape: [2], data_offsets: [0, 2] } });
  const header = json.padEnd(Math.ceil(json.length / 8) * 8);
  const raw = new Uint8Array([...new Uint8Array(new BigUint64Array([BigInt(header.length)]).buffer), ...new TextEncoder().encode(header), 1, 2]);
  const model = await pkg.open(file);
  const stats = async (name) => {
    const steps = [];
    const core = await model.stats(name, { detail: true, onProgress: (p) => steps.push(p) });
    assert.deepEqual(steps.at(-1), { done: steps.length, total: steps.length }, `${name}: progress to the end`);
    return summaryOf(core);
  };
  try {
    const s = await stats('f');
    const { std, ...rest } = s.stats;
    assert.deepEqual(rest, { finite: 3, nan: 1, posInf: 1, negInf: 2, min: 1, max: 3, mean: 2 });
    assert.ok(Math.abs(std - Math.sqrt(2 / 3)) < 1e-12, `std ${std}`);  // the core's √(Σx²/n − mean²)
    assert.equal(s.kind, 'float');
    assert.equal(s.histogram.counts.length, BINS);
    assert.deepEqual([s.histogram.counts[0], s.histogram.counts[32], s.histogram.counts[63]], [1, 1, 1]);
    assert.deepEqual(s.head, [1, NaN, 3, Infinity, -Infinity, -Infinity, 2]);
    assert.equal(s.heatmap, null, 'one dimension: no heatmap');
    // One distinct value: every value in the first bin, std 0.
    const same = await stats('same');
    assert.equal(same.histogram.counts[0], 3);
    assert.equal(same.stats.std, 0);
    // The whole float32 range does not overflow the bin arithmetic.
    const wide = await stats('wide');
    assert.deepEqual([wide.histogram.counts[0], wide.histogram.counts[32], wide.histogram.counts[63]], [1, 1, 1]);
    // Nothing finite: no histogram, no min/max.
    const none = await stats('none');
    assert.equal(none.histogram, null);
    assert.equal(none.stats.min, null);
    // Integers are read as their dtype; U64 min/max and values stay exact.
    const i16 = await stats('i16');
    assert.deepEqual([i16.kind, i16.dtype, i16.stats.min, i16.stats.max, i16.head], ['int', 'I16', -300, 7, [-300, 7]]);
    const u64 = await stats('u64');
    assert.deepEqual([u64.stats.min, u64.stats.max, u64.head], ['3', '18446744073709551615', ['18446744073709551615', '3']]);
    // A 2 × 3 weight: one cell per value, NaN where the cell saw no finite value.
    const grid = await stats('grid');
    assert.deepEqual({ ...grid.heatmap, abs: [...grid.heatmap.abs], signed: [...grid.heatmap.signed] },
      { rows: 2, cols: 3, cellRows: 2, cellCols: 3, abs: [1, 2, NaN, 4, 5, 6], signed: [1, -2, NaN, 4, 5, -6] });
  } finally {
    await model.close();
  }
  // F8 and friends: the core does not decode them; their first stored bytes are shown.
  const rawModel = await pkg.open(raw);
  try {
    const core = await rawModel.stats('x', { detail: true });
    assert.deepEqual(summaryOf(core), { kind: 'raw', dtype: 'F8_E4M3', elements: 2, head: [1, 2], bytes: 2, stats: null, histogram: null, heatmap: null });
  } finally {
    await rawModel.close();
  }
});

test('tensor-stats: a heatmap cell is the mean of the rows and columns it covers', async () => {
  // 600 × 300: cell row i covers rows ceil(i·600/256) .., cell column j columns ceil(j·300/256) ..
  const rows = 600;
  const cols = 300;
  const values = Float32Array.from({ length: rows * cols }, (_, k) => ((k % 7) - 3) * (1 + Math.floor(k / cols) / 100));
  const model = await pkg.open(makeSafetensors([{ name: 'w', dtype: 'F32', shape: [rows, cols], data: new Uint8Array(values.buffer) }]));
  try {
    const { heatmap } = summaryOf(await model.stats('w', { detail: true }));
    assert.deepEqual([heatmap.cellRows, heatmap.cellCols], [256, 256]);
    const start = (k, n, cells) => Math.ceil((k * n) / cells);
    for (const [i, j] of [[0, 0], [1, 7], [128, 200], [255, 255]]) {
      let sum = 0; let abs = 0; let n = 0;
      for (let r = start(i, rows, 256); r < start(i + 1, rows, 256); r += 1) {
        for (let c = start(j, cols, 256); c < start(j + 1, cols, 256); c += 1) {
          sum += values[r * cols + c]; abs += Math.abs(values[r * cols + c]); n += 1;
        }
      }
      assert.equal(heatmap.signed[i * 256 + j], Math.fround(sum / n), `cell ${i}, ${j} signed`);
      assert.equal(heatmap.abs[i * 256 + j], Math.fround(abs / n), `cell ${i}, ${j} abs`);
    }
  } finally {
    await model.close();
  }
});
