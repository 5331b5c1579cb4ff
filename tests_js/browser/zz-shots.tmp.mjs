import { startHarness, settled } from '/work/main/tests_js/browser/harness.js';
const h = await startHarness();
const { page, problems } = await h.newPage();
async function shot(file, name, out) {
  await page.setInputFiles('#file-input', file); await settled(page);
  await page.fill('#tensor-filter', name);
  await page.click(`tr.tensor-row[data-name="${name}"] button.tensor-open`);
  await page.waitForFunction(() => !document.getElementById('tensor-detail').hasAttribute('aria-busy'));
  await page.screenshot({ path: out });
  await page.keyboard.press('Escape');
}
await shot('/work/main/fixtures/models/tiny-mlp/model.safetensors', 'model.position_ids', '/tmp/d-i64.png');
await shot('/work/main/fixtures/gguf/valid/unknown_type.gguf', 'mystery', '/tmp/d-err.png');
await shot('/work/main/fixtures/safetensors/valid/all_dtypes.safetensors', 't_F8_E4M3', '/tmp/d-raw.png');
await page.emulateMedia({ colorScheme: 'dark' });
await shot('/work/main/fixtures/gguf/valid/ggml_blocks.gguf', 'blk.iq2_xxs', '/tmp/d-dark.png');
console.log(problems);
await h.close();
