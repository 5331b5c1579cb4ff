// Forget in the page is streamed (issue 15): quantizing a 1 GiB model to NF4 grows the tab
// by at most 2 × its largest tensor + 64 MiB, the bound the native CLI holds
// (tests_js/cli/forget-memory.test.mjs). The model: 16 F32 weights of 64 MiB each. The
// download goes to a Blob, which lives in the browser's blob store (the browser process,
// spilling to disk), not in the tab; what the tab holds is measured by memory.js.
// Measured 139 MiB on a loaded 2-core machine (was 247–255 MiB before the core took a
// layer's input over instead of copying it, and before Files were read without garbage,
// a piece at a time into WASM memory): ~99 MiB of WASM memory (the 64 MiB layer being
// forgotten, its output piece and the encoder's buffers), ~20 MiB of output pieces copied
// out to the download, the rest V8's heap and read buffers.
//   node --test tests_js/browser/forget-memory.test.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { open as openFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { safetensorsHeader } from '../support/safetensors.js';
import { settled, startHarness } from './harness.js';
import { MiB, startMeasuring } from './memory.js';

const SIDE = 4096;  // 4096 × 4096 F32 = 64 MiB per weight
const WEIGHTS = 16;  // 1 GiB in all
const BOUND = 2 * (SIDE * SIDE * 4) + 64 * MiB;

let harness;
let dir;
let file;

// Weight k, row r: a ramp from -1 to 1 across the row, scaled by (k + 1) / 16 and varied
// by row, so every block of 64 has its own absmax. Written 16 rows at a time.
async function writeModel(path) {
  const tensors = Array.from({ length: WEIGHTS }, (_, k) => ({ name: `model.layers.${k}.mlp.up_proj.weight`, dtype: 'F32', shape: [SIDE, SIDE] }));
  const { header } = safetensorsHeader(tensors);
  const rows = 16;
  const chunk = new Float32Array(rows * SIDE);
  const fh = await openFile(path, 'w');
  try {
    await fh.write(header);
    for (let k = 0; k < WEIGHTS; k += 1) {
      for (let r0 = 0; r0 < SIDE; r0 += rows) {
        for (let r = 0; r < rows; r += 1) {
          const f = ((k + 1) / WEIGHTS) * (1 + ((r0 + r) % 7) / 8);
          for (let c = 0; c < SIDE; c += 1) chunk[r * SIDE + c] = f * ((2 * c) / (SIDE - 1) - 1);
        }
        await fh.write(new Uint8Array(chunk.buffer));
      }
    }
  } finally {
    await fh.close();
  }
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'amn-forget-memory-'));
  file = join(dir, 'model.safetensors');
  await writeModel(file);
  harness = await startHarness();
});

after(async () => {
  await harness?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('forget of a 1 GiB model to NF4 in the page: the tab grows by at most 2 x the largest tensor + 64 MiB', { timeout: 240_000 }, async (t) => {
  assert.equal((await stat(file)).size > 1024 * MiB, true);
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', file);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'nf4');
    const measure = await startMeasuring(harness.profile);
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: 200_000 }), page.click('#forget-button')]);
    await page.waitForSelector('#lethe:not([hidden])', { timeout: 200_000 });
    const { total, line } = await measure();
    t.diagnostic(line);
    assert.equal(download.suggestedFilename(), 'model-nf4.safetensors');
    assert.match(await page.textContent('#lethe-summary'), new RegExp(`${WEIGHTS} of ${WEIGHTS} tensors quantized`));
    // NF4: half a byte per weight, plus an F32 absmax per block of 64 and the small parts.
    const size = (await stat(await download.path())).size;
    assert.ok(size > (WEIGHTS * SIDE * SIDE) / 2 && size < (WEIGHTS * SIDE * SIDE) * 0.6, `download of ${size} bytes`);
    assert.ok(total <= BOUND, `the tab grew by ${(total / MiB).toFixed(1)} MiB, over ${(BOUND / MiB).toFixed(0)} MiB`);
  });
});
