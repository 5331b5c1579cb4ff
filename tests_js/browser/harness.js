// Browser test harness: builds the page with Vite, serves it and the fixtures from one
// origin, and drives Debian's chromium with playwright-core (TOOLCHAIN.md quirk 13).
// Nothing here skips: a missing chromium or an unbuilt WASM core fails the run.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURES, ROOT, assertDistBuilt } from '../support/helpers.js';
import { startPageServer } from '../support/page-server.js';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// Builds web/ into a temporary folder (so a test run never touches web/dist).
async function buildPage(outDir) {
  const { build } = await import('vite');
  await build({
    configFile: join(ROOT, 'web', 'vite.config.js'),
    logLevel: 'warn',
    build: { outDir, emptyOutDir: true },
  });
}

// { url, server, context, dist, newPage(), close() }. Extra mounts (path prefix -> folder)
// are served beside the page and the fixtures.
export async function startHarness({ mounts = {} } = {}) {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); `
      + 'never `npx playwright install`');
  }
  assertDistBuilt();
  const { chromium } = await import('playwright-core');
  const dist = await mkdtemp(join(tmpdir(), 'amn-web-dist-'));
  const profile = await mkdtemp(join(tmpdir(), 'amn-chromium-'));
  await buildPage(dist);
  const server = await startPageServer({ mounts: { '/': dist, '/fixtures/': FIXTURES, ...mounts } });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    acceptDownloads: true,
    viewport: { width: 1200, height: 900 },
  });
  return {
    url: server.url,
    server,
    context,
    dist,
    profile,  // the browser's user-data-dir: its processes can be found by it (detail-memory.test.mjs)
    // A fresh page on the app; `problems` collects console errors, page errors and
    // failed requests (from the page and its worker). `initScript` runs before the
    // page's own scripts; `go: false` leaves the navigation to the caller.
    async newPage({ initScript, go = true } = {}) {
      const page = await context.newPage();
      if (initScript) await page.addInitScript(initScript);
      const problems = [];
      page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      page.on('requestfailed', (r) => {
        // Chromium reports a HEAD whose (empty) body nobody reads as ERR_ABORTED; benign.
        if (r.method() === 'HEAD' && r.failure()?.errorText === 'net::ERR_ABORTED') return;
        problems.push(`requestfailed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`);
      });
      page.on('worker', (w) => w.on('console', (m) => { if (m.type() === 'error') problems.push(`worker console: ${m.text()}`); }));
      if (go) await page.goto(server.url);
      return { page, problems };
    },
    // Runs `fn(page)` on a fresh page that closes with test `t`; the page's console must
    // stay clean (no errors, page errors or failed requests) throughout.
    async withPage(t, fn, options) {
      const { page, problems } = await this.newPage(options);
      t.after(() => page.close());
      await fn(page);
      assert.deepEqual(problems, [], 'console errors, page errors or failed requests');
    },
    async close() {
      await context.close().catch(() => {});
      await server.close();
      await rm(dist, { recursive: true, force: true });
      await rm(profile, { recursive: true, force: true });
    },
  };
}

// Waits until the job an action started has finished and the page shows a model or an
// error; returns which. (The activity bar appears synchronously when a job starts.)
export async function settled(page) {
  await page.waitForFunction(() => {
    const shown = (id) => !document.getElementById(id).hidden;
    return !shown('activity') && (shown('model-view') || shown('error-panel'));
  });
  return (await page.isVisible('#error-panel')) ? 'error' : 'model';
}

// The tensor table's rows as { name, dtype, shape (text), parameters, bytes (text) }.
export function tableRows(page) {
  return page.$$eval('#tensor-body tr.tensor-row', (rows) => rows.map((tr) => {
    const cells = [...tr.children].map((c) => c.textContent);
    return { name: tr.dataset.name, dtype: cells[1], scheme: cells[2], shape: cells[3], parameters: cells[4], bytes: cells[5] };
  }));
}

// What the page shows for a shape (web/src/format.js).
export const shapeText = (shape) => (shape.length === 0 ? 'scalar' : shape.join(' × '));

// safetensors bytes -> { header (parsed JSON without __metadata__), metadata, data (Uint8Array) }
export function parseSafetensors(bytes) {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const metadata = header.__metadata__ ?? null;
  delete header.__metadata__;
  return { header, metadata, data: bytes.subarray(8 + n) };
}
