// How much a test's browser tab grows, measured from outside as the kernel counts it: the
// resident memory of the browser's renderer processes (the page and its workers, WASM
// memory included). Before the work starts, each renderer's peak (VmHWM) is reset to its
// current size through /proc/PID/clear_refs; afterwards the new peak less that size is the
// growth. Linux only, like the rest of the browser suite.
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';

export const MiB = 1024 * 1024;

// The renderer processes of the browser whose profile folder is `profile`: their command
// lines (NUL- or, once a zygote has renamed them, space-separated) name it and --type=renderer.
// Not the one with --top-chrome-webui: it draws the browser's own UI, not a tab, and it
// grows by itself (up to ~30 MiB in 13 idle seconds after start-up, measured).
async function rendererPids(profile) {
  const pids = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');  // '' if it ended meanwhile
    const args = cmdline.split(/[\0 ]/);
    if (args.includes('--type=renderer') && args.includes(`--user-data-dir=${profile}`)
      && !args.includes('--top-chrome-webui')) pids.push(Number(name));
  }
  return pids;
}

async function memoryOf(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (key) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'))[1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

// Resets every renderer's peak to its current size; returns a function that measures, per
// renderer, how far the peak rose since, and the sum, with a line for t.diagnostic.
export async function startMeasuring(profile) {
  const pids = await rendererPids(profile);
  assert.ok(pids.length > 0, 'no renderer process');
  const before = new Map();
  for (const pid of pids) {
    await writeFile(`/proc/${pid}/clear_refs`, '5');  // 5: reset the peak RSS to the current RSS
    before.set(pid, (await memoryOf(pid)).rss);
  }
  return async () => {
    const growth = [];
    for (const [pid, rss] of before) growth.push({ pid, rss, growth: (await memoryOf(pid)).peak - rss });
    const total = growth.reduce((a, g) => a + Math.max(0, g.growth), 0);
    const line = `renderer growth: ${growth.map((g) => `pid ${g.pid}: ${(g.growth / MiB).toFixed(1)} MiB over ${(g.rss / MiB).toFixed(1)} MiB`).join('; ')}; total ${(total / MiB).toFixed(1)} MiB`;
    return { growth, total, line };
  };
}
