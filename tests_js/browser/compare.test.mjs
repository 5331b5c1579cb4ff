// The page's Compare view in Debian's chromium: the open model against a second one chosen
// as a file; the table the core's diff gives (statuses and numbers of fixtures/diff).
//   node --test tests_js/browser/compare.test.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../support/helpers.js';
import { settled, startHarness } from './harness.js';

let harness;
before(async () => { harness = await startHarness(); });
after(async () => { await harness?.close(); });

const file = async (rel, name) => ({ name, mimeType: 'application/octet-stream', buffer: await readFile(join(FIXTURES, rel)) });

test('compare: an F16 GGUF against its Q4_K_M, and the constructed pair', { timeout: 90_000 }, async (t) => {
  const expected = JSON.parse(await readFile(join(FIXTURES, 'diff/tiny-Q4_K_M.expected.json'), 'utf8'));
  const pair = JSON.parse(await readFile(join(FIXTURES, 'diff/pair.expected.json'), 'utf8'));
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', [await file('gguf_ftype/tiny_llama_f16.gguf', 'tiny_llama_f16.gguf')]);
    assert.equal(await settled(page), 'model');
    assert.ok(await page.isVisible('#compare-panel'));
    assert.ok(!(await page.isVisible('#compare')), 'no table before a comparison');
    await page.setInputFiles('#compare-files', [await file('gguf_ftype/tiny-Q4_K_M.gguf', 'tiny-Q4_K_M.gguf')]);
    await page.waitForSelector('#compare:not([hidden])');
    const rows = await page.$$eval('#compare-body tr', (trs) => trs.map((tr) => ({
      name: tr.dataset.name, status: tr.dataset.status, b: tr.children[3].textContent,
      cosine: Number(tr.children[7].textContent), snr: tr.children[8].textContent,
    })));
    assert.deepEqual(rows.map((r) => [r.name, r.status]), expected.tensors.map((e) => [e.name, e.status]));
    for (const [i, r] of rows.entries()) {
      const e = expected.tensors[i];
      assert.equal(r.b, e.dtype_b, r.name);
      assert.ok(Math.abs(r.cosine - e.cosine) < 1e-6, `${r.name}: cosine ${r.cosine} vs ${e.cosine}`);
      if (e.snr_db === null) assert.equal(r.snr, '∞', r.name);
      else assert.ok(Math.abs(Number(r.snr) - e.snr_db) < 0.01, `${r.name}: SNR ${r.snr} vs ${e.snr_db}`);
    }
    assert.equal(await page.getAttribute('#compare', 'data-identical'), 'false');
    const count = (status) => expected.tensors.filter((e) => e.status === status).length;
    assert.equal(await page.textContent('#compare-summary'), `A: this model, B: tiny-Q4_K_M.gguf. 30 tensors: ${count('different')} different, `
      + `${count('identical')} identical. The models differ.`);

    // Another model replaces the comparison; the pair's statuses, the missing sides shown as such.
    await page.setInputFiles('#file-input', [await file('diff/a.safetensors', 'a.safetensors')]);
    assert.equal(await settled(page), 'model');
    assert.ok(!(await page.isVisible('#compare')), 'a new model hides the old comparison');
    await page.setInputFiles('#compare-files', [await file('diff/b.safetensors', 'b.safetensors')]);
    await page.waitForSelector('#compare:not([hidden])');
    const statuses = await page.$$eval('#compare-body tr', (trs) => trs.map((tr) => [tr.dataset.name, tr.dataset.status]));
    assert.deepEqual(statuses, pair.tensors.map((e) => [e.name, e.status]));
    const onlyB = await page.$$eval('#compare-body tr[data-name="only_b"] td', (tds) => tds.map((td) => td.textContent));
    assert.deepEqual(onlyB.slice(1, 5), ['only in b', '–', 'F32', '–']);
    const shape = await page.$$eval('#compare-body tr[data-name="shape"] td', (tds) => tds.map((td) => td.textContent));
    assert.deepEqual(shape.slice(2, 4), ['F32 [2, 3]', 'F32 [3, 2]']);

    // A Hugging Face checkpoint against llama.cpp's Q8_0 GGUF of it: matched through the names.
    const hf = JSON.parse(await readFile(join(FIXTURES, 'diff/tiny_llama_hf-Q8_0.expected.json'), 'utf8'));
    await page.setInputFiles('#file-input', [await file('diff/tiny_llama_hf/model.safetensors', 'model.safetensors')]);
    assert.equal(await settled(page), 'model');
    await page.setInputFiles('#compare-files', [await file('diff/tiny_llama_hf-Q8_0.gguf', 'tiny_llama_hf-Q8_0.gguf')]);
    await page.waitForSelector('#compare:not([hidden])');
    const mapped = await page.$$eval('#compare-body tr', (trs) => trs.map((tr) => [tr.dataset.status, tr.children[0].textContent]));
    assert.deepEqual(mapped, hf.tensors.map((e) => [e.status, `${e.name} = ${e.name_b}`]));
  });
});
