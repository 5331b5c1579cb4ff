// The page as a model viewer (issue 17): names readable at 1280 px and on a 390 px phone
// (every visible row keeps the part of its name that tells it from its neighbours), natural
// sort, the full name on focus, the layer tree, ?url= and #tensor= links, the URL box
// following what is open, and a URL on a server without CORS explained.
//   node --test tests_js/browser/viewer.test.mjs
// AMN_SCREENSHOTS=docs/images also writes the screenshots docs/web.md shows.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeSafetensors } from '../support/safetensors.js';
import { startRangeServer } from '../support/range-server.js';
import { fixtureFiles } from '../support/quant-fixtures.js';
import { settled, startHarness, tableRows } from './harness.js';

const SCREENSHOTS = process.env.AMN_SCREENSHOTS || null;
const LAYERS = 12;
const PROJ = ['self_attn.q_proj.weight', 'self_attn.k_proj.weight', 'self_attn.v_proj.weight',
  'self_attn.o_proj.weight', 'mlp.gate_proj.weight', 'mlp.up_proj.weight', 'mlp.down_proj.weight',
  'input_layernorm.weight', 'post_attention_layernorm.weight'];

// A Llama-shaped model's names (12 layers, so layers.10 and layers.2 meet), tiny shapes.
function llamaTensors() {
  const tensors = [{ name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [32, 8] }];
  for (let i = 0; i < LAYERS; i += 1) {
    for (const p of PROJ) tensors.push({ name: `model.layers.${i}.${p}`, dtype: 'BF16', shape: p.includes('norm') ? [8] : [8, 8] });
  }
  tensors.push({ name: 'model.norm.weight', dtype: 'BF16', shape: [8] }, { name: 'lm_head.weight', dtype: 'BF16', shape: [32, 8] });
  return tensors;
}

let harness;
let dir;
let server; // another origin, without CORS headers
const TENSORS = llamaTensors();

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'amn-viewer-'));
  await writeFile(join(dir, 'llama.safetensors'), makeSafetensors(TENSORS, { format: 'pt' }));
  harness = await startHarness({ mounts: { '/models/': dir } });
  server = await startRangeServer({ root: dir });
});

after(async () => {
  await server?.close();
  await harness?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// What tells a name from its neighbours: its numbers and its last two dotted parts.
const distinguishing = (name) => name.split('.').filter((p, i, all) => i >= all.length - 2 || /^\d+$/.test(p));

// Every row in view: its shown name, whether the text fits its button, and whether the
// row is inside the scroll box.
function visibleRows(page) {
  return page.$$eval('#tensor-body tr.tensor-row', (rows) => {
    const box = document.getElementById('tensor-scroll').getBoundingClientRect();
    return rows.map((tr) => {
      const button = tr.querySelector('button.tensor-open');
      const r = button.getBoundingClientRect();
      return {
        name: tr.dataset.name,
        shown: button.textContent,
        label: button.getAttribute('aria-label') ?? button.textContent,
        fits: button.scrollWidth <= button.clientWidth,
        width: r.width,
        visible: r.bottom > box.top && r.top < box.bottom && r.height > 0,
      };
    }).filter((r) => r.visible);
  });
}

function assertReadable(rows, viewport) {
  assert.ok(rows.length >= 5, `${viewport}: rows in view: ${rows.length}`);
  for (const row of rows) {
    assert.equal(row.label, row.name, 'the full name is the accessible name');
    assert.ok(row.fits, `${viewport}: "${row.shown}" is cut by its cell (${row.width} px)`);
    // The parts in order, each whole, in the text shown.
    let at = 0;
    for (const part of distinguishing(row.name)) {
      const found = row.shown.indexOf(part, at);
      assert.ok(found >= 0, `${viewport}: "${row.shown}" lost "${part}" of ${row.name}`);
      at = found + part.length;
    }
    assert.ok(row.shown.endsWith(row.name.split('.').slice(-2).join('.')), `${viewport}: "${row.shown}" ends as ${row.name}`);
  }
}

for (const [viewport, width, height] of [['desktop', 1280, 900], ['phone', 390, 844]]) {
  test(`${viewport} (${width} px): every visible row shows what tells its name apart`, { timeout: 60_000 }, async (t) => {
    await harness.withPage(t, async (page) => {
      await page.setViewportSize({ width, height });
      await page.goto(harness.url);
      await page.setInputFiles('#file-input', join(dir, 'llama.safetensors'));
      assert.equal(await settled(page), 'model');
      await page.waitForFunction(() => document.querySelectorAll('#tensor-body tr.tensor-row').length > 0);
      // No horizontal scrolling of the page itself.
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'the page fits the width');
      await page.locator('#tensor-scroll').scrollIntoViewIfNeeded();
      assertReadable(await visibleRows(page), viewport);
      if (viewport === 'desktop') {
        // The name column takes the room: more than half the table.
        const share = await page.$eval('#tensor-table', (table) => table.querySelector('th[data-key="name"]').offsetWidth / table.offsetWidth);
        assert.ok(share > 0.5, `name column share ${share}`);
      }
      // Scrolled to the end: still readable, and sorted naturally.
      await page.click('th[data-key="name"] button');
      await page.$eval('#tensor-scroll', (s) => { s.scrollTop = s.scrollHeight; });
      await page.waitForFunction(() => [...document.querySelectorAll('#tensor-body tr.tensor-row')].some((r) => r.dataset.name === 'model.norm.weight'));
      assertReadable(await visibleRows(page), `${viewport}, scrolled`);
      // The full name shows on focus.
      const button = page.locator('#tensor-body tr.tensor-row button.tensor-open').last();
      await button.focus();
      const full = await button.getAttribute('aria-label');
      const tip = await page.$eval('.name-tip', (n) => (n.hidden ? null : n.textContent));
      if (full !== await button.textContent()) assert.equal(tip, full, 'the tip shows the full name');
      if (SCREENSHOTS) {
        await page.$eval('#tensor-scroll', (s) => { s.scrollTop = 0; }); // sorted by name, from the top
        await page.locator('#tensor-scroll').scrollIntoViewIfNeeded();
        await page.screenshot({ path: join(SCREENSHOTS, `web-${viewport}.png`) });
      }
    }, { go: false });
  });
}

test('the layer tree: groups by dotted prefix with totals, opens a tensor\'s detail', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(dir, 'llama.safetensors'));
    assert.equal(await settled(page), 'model');
    await page.click('#view-tree');
    assert.equal(await page.isVisible('#tensor-scroll'), false);
    const group = (path) => page.locator(`#tensor-tree details[data-path="${path}"]`);
    const meta = (path) => group(path).locator(':scope > summary .tree-meta')
      .evaluate((m) => ({ count: m.textContent.split(' · ')[0], exact: m.title }));
    const integer = (n) => new Intl.NumberFormat('en-US').format(n);
    const totals = (list) => {
      const parameters = list.reduce((n, x) => n + x.shape.reduce((a, b) => a * b, 1), 0);
      return { count: `${list.length} tensors`, exact: `${integer(parameters)} parameters, ${integer(2 * parameters)} bytes` };
    };
    assert.deepEqual(await meta('model.layers'), totals(TENSORS.filter((x) => x.name.startsWith('model.layers.'))));
    assert.deepEqual(await meta('model.layers.3'), totals(TENSORS.filter((x) => x.name.startsWith('model.layers.3.'))));
    assert.deepEqual(await meta('model'), totals(TENSORS.filter((x) => x.name.startsWith('model.'))));
    // Layers in natural order.
    const layers = await page.$$eval('#tensor-tree details[data-path="model.layers"] > ul > li > details', (ds) => ds.map((d) => d.dataset.path));
    assert.deepEqual(layers, Array.from({ length: LAYERS }, (_, i) => `model.layers.${i}`));
    // Down to a tensor, which opens its detail.
    for (const path of ['model.layers.10', 'model.layers.10.self_attn', 'model.layers.10.self_attn.q_proj']) {
      await group(path).locator(':scope > summary').click();
    }
    await page.click('#tensor-tree button.tree-leaf[aria-label="model.layers.10.self_attn.q_proj.weight"]');
    await page.waitForFunction(() => document.getElementById('tensor-dialog').open
      && !document.getElementById('tensor-detail').hasAttribute('aria-busy'));
    assert.equal(await page.textContent('#tensor-dialog-title'), 'model.layers.10.self_attn.q_proj.weight');
    await page.keyboard.press('Escape');
    assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'model.layers.10.self_attn.q_proj.weight');
    // The filter applies to the tree too.
    await page.fill('#tensor-filter', 'lm_head');
    assert.deepEqual(await page.$$eval('#tensor-tree button.tree-leaf', (bs) => bs.map((b) => b.getAttribute('aria-label'))), ['lm_head.weight']);
    await page.click('#view-table');
    assert.equal(await page.isVisible('#tensor-tree'), false);
  });
});

test('the detail view draws a heatmap of a 2-D weight, downsampled, as |value| or signed', { timeout: 60_000 }, async (t) => {
  // 600 × 40 F32: zero but for one row of -2 (rows 300..302 land in cell row 128) and
  // a column of +1 at column 39 (cell column 39).
  const rows = 600;
  const cols = 40;
  const values = new Float32Array(rows * cols);
  for (let c = 0; c < cols; c += 1) values[300 * cols + c] = -2;
  for (let r = 0; r < rows; r += 1) values[r * cols + 39] = 1;
  const file = join(dir, 'heat.safetensors');
  await writeFile(file, makeSafetensors([{ name: 'w', dtype: 'F32', shape: [rows, cols], data: new Uint8Array(values.buffer) },
    { name: 'b', dtype: 'F32', shape: [cols] }]));
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', file);
    assert.equal(await settled(page), 'model');
    const pixels = () => page.$eval('#tensor-detail canvas.heatmap', (canvas) => {
      const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      const at = (r, c) => [...data.slice(4 * (r * canvas.width + c), 4 * (r * canvas.width + c) + 3)];
      // cell row 128 holds rows 300..302: one row of -2 among three
      return { width: canvas.width, height: canvas.height, zero: at(0, 0), row: at(128, 0), column: at(0, 39), label: canvas.getAttribute('aria-label') };
    });
    await page.click('#tensor-body tr.tensor-row[data-name="w"] button.tensor-open');
    await page.waitForFunction(() => !document.getElementById('tensor-detail').hasAttribute('aria-busy'));
    const abs = await pixels();
    assert.equal(abs.width, cols);
    assert.equal(abs.height, 256);
    assert.match(abs.label, /600 × 40 values in 256 × 40 cells, mean absolute value/);
    assert.deepEqual(abs.zero, [247, 247, 245], 'zero is the lightest');
    // |mean| of the column (1) is the largest cell: the darkest blue; the row cell
    // (mean |v| 2/3 or 2/2) is dark too.
    assert.deepEqual(abs.column, [20, 44, 120]);
    assert.notDeepEqual(abs.row, abs.zero);
    await page.check('#heatmap-signed');
    const signed = await pixels();
    assert.ok(signed.row[2] > signed.row[0], `negative is blue: ${signed.row}`);
    assert.ok(signed.column[0] > signed.column[2], `positive is red: ${signed.column}`);
    await page.keyboard.press('Escape');
    // A 1-D tensor has no heatmap.
    await page.click('#tensor-body tr.tensor-row[data-name="b"] button.tensor-open');
    await page.waitForFunction(() => !document.getElementById('tensor-detail').hasAttribute('aria-busy')
      && document.querySelector('#tensor-detail [data-stat="min"]'));
    assert.equal(await page.$('#tensor-detail canvas.heatmap'), null);
  });
});

test('a quantized model: the summary counts what the table lists, NF4 weights show their scheme, Parts wrap', { timeout: 60_000 }, async (t) => {
  const { model, configs } = fixtureFiles('bnb', 'nf4');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', [
      { name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: await readFile(model) },
      ...await Promise.all(configs.map(async (c) => ({ name: c.name, mimeType: 'application/json', buffer: await readFile(c.path) })))]);
    assert.equal(await settled(page), 'model');
    const rows = await tableRows(page);
    const tensors = await page.$eval('#summary dl.facts', (dl) => {
      const div = [...dl.children].find((d) => d.querySelector('dt').textContent === 'Tensors');
      return { text: div.querySelector('dd').textContent, title: div.querySelector('dd').title };
    });
    assert.equal(tensors.text, String(rows.length));
    assert.match(tensors.title, /^13 stored tensors/);
    assert.equal(await page.isVisible('#cast-all-label'), true);
    const name = 'model.layers.0.self_attn.q_proj.weight';
    assert.equal(rows.find((r) => r.name === name).dtype, 'bnb-nf4');
    await page.click(`#tensor-body tr.tensor-row[data-name="${name}"] button.tensor-open`);
    await page.waitForFunction(() => !document.getElementById('tensor-detail').hasAttribute('aria-busy'));
    const layout = await page.evaluate(() => {
      const detail = document.getElementById('tensor-detail');
      const items = [...detail.querySelectorAll('.parts-list li')];
      const lineHeight = parseFloat(getComputedStyle(items[0]).lineHeight) || 20;
      const facts = Object.fromEntries([...detail.querySelectorAll('dl.detail-facts > div')].map((d) => [d.querySelector('dt').textContent, d.querySelector('dd').textContent]));
      return {
        parts: items.length,
        // a part that wraps breaks after a dot or underscore: its text is unchanged
        oneLine: items.every((li) => li.getBoundingClientRect().height < 2.5 * lineHeight),
        fits: detail.scrollWidth <= detail.clientWidth,
        statsInView: detail.querySelector('[data-stat="max"]').getBoundingClientRect().right <= detail.getBoundingClientRect().right,
        stored: facts['Stored dtype'],
      };
    });
    assert.deepEqual(layout, { parts: 6, oneLine: true, fits: true, statsInView: true, stored: 'U8' });
  });
});

test('names sort naturally: layers.2 before layers.10', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(dir, 'llama.safetensors'));
    assert.equal(await settled(page), 'model');
    await page.fill('#tensor-filter', 'q_proj');
    await page.click('th[data-key="name"] button');
    const names = await page.$$eval('#tensor-body tr.tensor-row', (rows) => rows.map((r) => r.dataset.name));
    assert.deepEqual(names, Array.from({ length: LAYERS }, (_, i) => `model.layers.${i}.self_attn.q_proj.weight`));
  });
});

test('?url= opens the model at load and #tensor= its detail; the address bar follows', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    const model = new URL('/models/llama.safetensors', harness.url).href;
    const name = 'model.layers.10.mlp.down_proj.weight';
    await page.goto(`${harness.url}?url=${encodeURIComponent(model)}#tensor=${encodeURIComponent(name)}`);
    assert.equal(await settled(page), 'model');
    assert.equal(await page.inputValue('#url-input'), model);
    await page.waitForFunction((n) => document.getElementById('tensor-dialog').open
      && document.getElementById('tensor-dialog-title').textContent === n, name);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !window.location.hash);
    assert.equal(new URL(page.url()).searchParams.get('url'), model);

    // Opening a detail puts it in the address; a local file clears the URL box and ?url=.
    await page.click('#tensor-body tr.tensor-row[data-name="model.embed_tokens.weight"] button.tensor-open');
    await page.waitForFunction(() => window.location.hash === '#tensor=model.embed_tokens.weight');
    await page.keyboard.press('Escape');
    await page.setInputFiles('#file-input', join(dir, 'llama.safetensors'));
    assert.equal(await settled(page), 'model');
    assert.equal(await page.inputValue('#url-input'), '');
    assert.equal(new URL(page.url()).search, '');
  }, { go: false });
});

test('a URL on another origin without CORS says why it could not be read', { timeout: 60_000 }, async (t) => {
  const { page } = await harness.newPage();
  t.after(() => page.close());
  await page.fill('#url-input', `${server.url}llama.safetensors`);
  await page.click('#url-open');
  assert.equal(await settled(page), 'error');
  assert.equal(await page.getAttribute('#error-panel', 'data-code'), 'io');
  assert.match(await page.textContent('#error-message'), /CORS.*Access-Control-Allow-Origin/);
});

test('plain models hide the quantized-only controls and columns', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(dir, 'llama.safetensors'));
    assert.equal(await settled(page), 'model');
    assert.equal(await page.isVisible('#cast-all-label'), false);
    assert.equal(await page.isVisible('th[data-key="scheme"]'), false);
  });
});

test('the progress panel does not move the page', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    const before = await page.$eval('#url-form', (f) => f.getBoundingClientRect().bottom);
    await page.evaluate(() => { document.getElementById('activity').hidden = false; });
    const during = await page.$eval('#url-form', (f) => f.getBoundingClientRect().bottom);
    await page.evaluate(() => { document.getElementById('activity').hidden = true; });
    assert.equal(during, before);
  });
});
