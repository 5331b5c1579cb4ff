// Quantized safetensors in Debian's chromium: the page finds the quantized weights (the
// scheme column, the Quantization summary), shows a dequantized weight's values, and
// converts to the bytes the producers' own dequantizers wrote
// (fixtures/quantized/<family>/<variant>.expected.safetensors).
//   node --test tests_js/browser/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadPackage, tempDir } from '../support/helpers.js';
import { GPTQ_V2_QUANTIZE_CONFIG_ONLY, fixtureFiles } from '../support/quant-fixtures.js';
import { parseSafetensors, settled, startHarness, tableRows } from './harness.js';

// [family folder, variant, scheme as the page names it, config files (default: config.json)]
const CASES = [
  ['fp8', 'block_e4m3', 'fp8'],
  ['fp8', 'channel_e4m3_ct', 'fp8'],
  ['bnb', 'nf4', 'bnb-nf4'],
  ['mlx', 'modes_bf16', 'mlx'],
  ['gptq', 'w4_g128_sym_v1', 'gptq'],
  ['gptq', 'w4_g128_asym_v2', 'gptq', GPTQ_V2_QUANTIZE_CONFIG_ONLY],
];

let harness;
let pkg;

// The first values of a weight read as F32 through the npm package in Node, from the
// same files the page was given.
async function packageHead(family, variant, configs, name, count) {
  const files = fixtureFiles(family, variant, configs);
  const list = [new File([await readFile(files.model)], 'model.safetensors')];
  for (const c of files.configs) list.push(new File([await readFile(c.path)], c.name));
  const model = await pkg.open(list);
  try {
    const t = await model.tensor(name, { to: 'f32' });
    return Array.from(t.data.subarray(0, count), String);
  } finally {
    await model.close();
  }
}
before(async () => { pkg = await loadPackage('node.js'); harness = await startHarness(); });
after(async () => { await harness?.close(); });

// The model and its config files, picked together as a user picks a folder's files.
async function pick(page, family, variant, configs) {
  const { model, configs: list } = fixtureFiles(family, variant, configs);
  const files = [{ name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: await readFile(model) }];
  for (const c of list) files.push({ name: c.name, mimeType: 'application/json', buffer: await readFile(c.path) });
  await page.setInputFiles('#file-input', files);
  assert.equal(await settled(page), 'model');
}

for (const [family, variant, scheme, configs] of CASES) {
  const label = configs ? `${family}/${variant} with ${Object.keys(configs).join(' + ')}` : `${family}/${variant}`;
  test(`${label}: scheme column, summary, detail values and the producer's bytes`,
    { timeout: 90_000 }, async (t) => {
      const want = parseSafetensors(new Uint8Array(await readFile(fixtureFiles(family, variant).expected)));
      // (names with "@<target>" are the producer's output in another target, not weights)
      const names = Object.keys(want.header).filter((n) => !n.includes('@'));
      const dir = await tempDir(t, 'amn-web-quant-');
      await harness.withPage(t, async (page) => {
        await pick(page, family, variant, configs);
        const rows = await tableRows(page);
        for (const name of names) {
          const row = rows.find((r) => r.name === name);
          assert.ok(row, `${name} listed once, as the weight it encodes`);
          assert.match(row.scheme, new RegExp(`^${scheme} · \\d+\\.\\d\\d bits$`), name);
        }
        const summary = await page.textContent('#summary');
        assert.match(summary, /Quantization/);
        if (configs?.['quantize_config.json']) assert.match(summary, /quantize_config\.json/);

        // The detail view dequantizes the weight: its first values are the producer's.
        const name = names[0];
        await page.fill('#tensor-filter', name);
        await page.click(`#tensor-body tr.tensor-row[data-name="${name}"] button.tensor-open`);
        await page.waitForFunction((n) => document.getElementById('tensor-dialog-title').textContent === n
          && !document.getElementById('tensor-detail').hasAttribute('aria-busy'), name);
        const shown = await page.evaluate(() => ({
          head: [...document.querySelectorAll('#tensor-detail .head-values code')].map((c) => c.dataset.value ?? c.textContent),
          facts: Object.fromEntries([...document.querySelectorAll('#tensor-detail dl.detail-facts > div')]
            .map((d) => [d.querySelector('dt').textContent, d.querySelector('dd').textContent])),
          error: document.querySelector('#tensor-detail .detail-error')?.textContent ?? null,
        }));
        assert.equal(shown.error, null);
        assert.match(shown.facts.Scheme, new RegExp(`^${scheme} \\(`));
        // The view reads the weight as F32: the same values the package's tensor() gives.
        assert.deepEqual(shown.head, await packageHead(family, variant, configs, name, shown.head.length));
        await page.keyboard.press('Escape');
        await page.fill('#tensor-filter', '');

        // "kept as stored": every weight in the dtype its producer's dequantizer returns.
        await page.selectOption('#convert-dtype', 'keep');
        const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
        const path = join(dir, download.suggestedFilename());
        await download.saveAs(path);
        const got = parseSafetensors(new Uint8Array(await readFile(path)));
        for (const n of names) {
          const a = got.header[n]; const b = want.header[n];
          assert.ok(a, `${n} written`);
          assert.equal(a.dtype, b.dtype, n);
          assert.deepEqual(a.shape, b.shape, n);
          assert.ok(Buffer.from(got.data.subarray(...a.data_offsets)).equals(Buffer.from(want.data.subarray(...b.data_offsets))),
            `${n}: the producer's bytes`);
        }
      });
    });
}

test('"cast unquantized tensors too": a quantized model\'s norm follows the target only when asked', { timeout: 90_000 }, async (t) => {
  const dir = await tempDir(t, 'amn-web-cast-all-');
  await harness.withPage(t, async (page) => {
    await pick(page, 'fp8', 'block_e4m3');
    assert.ok(await page.isVisible('#cast-all-label'), 'offered for a quantized model');
    await page.selectOption('#convert-dtype', 'f32');
    for (const [castAll, norm] of [[false, 'BF16'], [true, 'F32']]) {
      await page.setChecked('#cast-all', castAll);
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
      const path = join(dir, `${castAll}-${download.suggestedFilename()}`);
      await download.saveAs(path);
      const out = parseSafetensors(new Uint8Array(await readFile(path)));
      assert.equal(out.header['model.layers.0.input_layernorm.weight'].dtype, norm, `cast all: ${castAll}`);
      assert.equal(out.header['model.layers.0.self_attn.q_proj.weight'].dtype, 'F32');
    }
  });
});
