// NumPy and PyTorch files in Debian's chromium: the page opens them, shows the pickle
// verdict and the checkpoint's other values, refuses a malicious pickle with its code,
// and converts to safetensors holding the bytes numpy.load / torch.load give.
//   node --test tests_js/browser/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, tempDir } from '../support/helpers.js';
import { parseSafetensors, settled, startHarness, tableRows } from './harness.js';

const sha256 = (b) => createHash('sha256').update(b).digest('hex');
let harness;
before(async () => { harness = await startHarness(); });
after(async () => { await harness?.close(); });

async function convertKept(page, dir) {
  await page.selectOption('#convert-dtype', 'keep');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#convert-button')]);
  const path = join(dir, download.suggestedFilename());
  await download.saveAs(path);
  return parseSafetensors(new Uint8Array(await readFile(path)));
}

function assertHashes(out, want, label) {
  for (const x of want) {
    const h = out.header[x.name];
    assert.ok(h, `${label}: ${x.name} written`);
    assert.equal(sha256(out.data.subarray(h.data_offsets[0], h.data_offsets[1])), x.sha256, `${label}: ${x.name}`);
  }
}

test('a PyTorch checkpoint: tensors, pickle verdict, other values, and torch.load\'s bytes', { timeout: 90_000 }, async (t) => {
  const want = JSON.parse(await readFile(join(FIXTURES, 'torch', 'expected', 'nested.pt.json'), 'utf8')).tensors;
  const dir = await tempDir(t, 'amn-web-pth-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(FIXTURES, 'torch', 'valid', 'nested.pt'));
    assert.equal(await settled(page), 'model');
    assert.deepEqual((await tableRows(page)).map((r) => r.name).sort(), want.map((x) => x.name).sort());
    const summary = await page.textContent('#summary');
    assert.match(summary, /Every global the pickle names is on the allowlist/);
    assert.match(summary, /torch\._utils\._rebuild_tensor_v2/);
    assert.match(summary, /optimizer\.param_groups\.0\.lr/);
    assertHashes(await convertKept(page, dir), want, 'nested.pt');
  });
});

test('a pickle naming os.system is refused with disallowed_global', { timeout: 60_000 }, async (t) => {
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', join(FIXTURES, 'torch', 'broken', 'zip_os_system.pt'));
    assert.equal(await settled(page), 'error');
    assert.equal(await page.textContent('#error-code'), 'disallowed_global');
    assert.match(await page.textContent('#error-message'), /posix\.system/);
  });
});

test('NumPy .npz (compressed, big-endian, Fortran order) and .npy: numpy.load\'s bytes', { timeout: 90_000 }, async (t) => {
  const expected = JSON.parse(await readFile(join(FIXTURES, 'numpy', 'expected.json'), 'utf8'));
  const dir = await tempDir(t, 'amn-web-npy-');
  await harness.withPage(t, async (page) => {
    for (const file of ['valid/savez_compressed.npz', 'valid/fortran_i2_be_3d.npy']) {
      const want = expected.find((e) => e.file === file).arrays;
      await page.setInputFiles('#file-input', join(FIXTURES, 'numpy', file));
      assert.equal(await settled(page), 'model');
      assert.match(await page.textContent('#summary'), /NumPy/);
      assertHashes(await convertKept(page, dir), want, file);
    }
  });
});
