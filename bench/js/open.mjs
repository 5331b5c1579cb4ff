// Header-open benchmark of the npm package against its Node peers, for issue 17's targets
// (docs/benchmarks.md, "Opening headers in Node"). Every comparison runs in this one
// process, interleaved round by round (each round runs every contender once, in a
// shuffled order), and reports each contender's median and its ratio to a
// reference: the median over rounds of (contender / reference) within the round. On a
// shared VM whose speed swings, only such same-run ratios mean anything.
//   1. safetensors header from a local file: open() vs fs reads + JSON.parse (the floor:
//      readSync, the tighter; FileHandle reads wait on libuv's thread pool)
//   2. safetensors over localhost HTTP: open(url) vs @huggingface/hub parseSafetensorsMetadata
//   3. GGUF, local and over localhost HTTP: open() vs @huggingface/gguf gguf()
//   4. cold start: `amn inspect` vs `gguf-view` (@huggingface/gguf's CLI) in fresh processes
// Needs the WASM package (make wasm) and the peers (npm ci in bench/js).
//   node bench/js/open.mjs [--rounds N] [--cold-rounds N] [--tables 1,2,3,4]
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, openSync, readFileSync, readSync, closeSync, rmSync, statSync } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSafetensorsMetadata } from '@huggingface/hub';
import { gguf } from '@huggingface/gguf';
import { loadCoreForCli, open } from '../../npm/node.js';
import { bigHeaderFile } from '../make_big_header.mjs';
import { llamaGguf } from './make_gguf.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROUNDS = arg('--rounds', 21);
// --tables 1,4: only those tables (default every one).
const TABLES = process.argv.includes('--tables') ? process.argv[process.argv.indexOf('--tables') + 1].split(',').map(Number) : [1, 2, 3, 4];
const want = (n) => TABLES.includes(n);
const COLD_ROUNDS = arg('--cold-rounds', 15);
const BATCH_MS = 20;  // each timed run repeats the open until it lasts about this long

const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ---- inputs ---------------------------------------------------------------------------
// The fixtures are copied alone into the temp folder: open(path) also reads a config.json
// lying beside a model, which is not header work.
const dir = mkdtempSync(join(tmpdir(), 'amn-bench-js-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const place = (from, name) => { copyFileSync(join(root, from), join(dir, name)); return join(dir, name); };
const st = [
  { label: 'tiny-mlp fixture', path: place('fixtures/models/tiny-mlp/model.safetensors', 'tiny.safetensors') },
  { label: '1,008 tensors (112 layers)', path: join(dir, 'layers112.safetensors'), make: (p) => bigHeaderFile(p, { layers: 112 }) },
  { label: '32,400 tensors (3,600 layers)', path: join(dir, 'layers3600.safetensors'), make: (p) => bigHeaderFile(p, { layers: 3600 }) },
];
const gg = [
  { label: 'tiny-Q4_K_M fixture', path: place('fixtures/gguf_ftype/tiny-Q4_K_M.gguf', 'tiny-Q4_K_M.gguf') },
  { label: '1,011 tensors, 32,000-token vocabulary', path: join(dir, 'llama112.gguf'), make: (p) => llamaGguf(p, { layers: 112 }) },
];
for (const f of [...st, ...gg]) f.make?.(f.path);
const headerLength = (path) => {
  const fd = openSync(path, 'r');
  const b = Buffer.alloc(8);
  readSync(fd, b, 0, 8, 0);
  closeSync(fd);
  return Number(b.readBigUInt64LE(0));
};
for (const f of st) f.headerBytes = headerLength(f.path);

// ---- the localhost server (a child process) -------------------------------------------
const server = spawn(process.execPath, [join(here, 'range_server.mjs'), ...[...st, ...gg].map((f) => f.path)],
  { stdio: ['ignore', 'pipe', 'inherit'] });
process.on('exit', () => server.kill());
const port = await new Promise((res, rej) => {
  server.stdout.once('data', (d) => res(Number(String(d).trim())));
  server.once('exit', (code) => rej(new Error(`range server exited (${code})`)));
});
const hubUrl = `http://127.0.0.1:${port}`;
const urlOf = (f) => `${hubUrl}/bench/model/resolve/main/${f.path.split('/').pop()}`;
const requestCount = async () => Number(await (await fetch(`${hubUrl}/__count`)).text());

// ---- contenders -----------------------------------------------------------------------
function expect(got, want, who) {
  if (got !== want) throw new Error(`${who}: saw ${got} tensors, expected ${want}`);
}
const amnOpen = (src, options) => async () => { const m = await open(src, options); await m.close(); };
// URL reads in Node go through node:http unless a fetch is given: this row is the fetch path.
const viaFetch = { fetch: (url, init) => fetch(url, init) };
const amnInfo = (src, n) => async () => {
  const m = await open(src);
  expect(m.info.tensors.length, n, 'anamnesis');
  await m.close();
};
// The floor: the header's bytes read with Node's fs and parsed by JSON.parse, nothing checked.
const floorAsync = (path, n) => async () => {
  const fh = await openFile(path, 'r');
  const len = Buffer.alloc(8);
  await fh.read(len, 0, 8, 0);
  const buf = Buffer.allocUnsafe(Number(len.readBigUInt64LE(0)));
  await fh.read(buf, 0, buf.length, 8);
  await fh.close();
  expect(Object.keys(JSON.parse(buf.toString('utf8'))).length - 1, n, 'JSON.parse');
};
const floorSync = (path, n) => async () => {
  const fd = openSync(path, 'r');
  const len = Buffer.alloc(8);
  readSync(fd, len, 0, 8, 0);
  const buf = Buffer.allocUnsafe(Number(len.readBigUInt64LE(0)));
  readSync(fd, buf, 0, buf.length, 8);
  closeSync(fd);
  expect(Object.keys(JSON.parse(buf.toString('utf8'))).length - 1, n, 'JSON.parse');
};
// The floor plus the stats open(path) made before it looked for config files only when
// needed: the path itself (file or folder?) and the config files the native CLI reads
// beside a model (config.json, quantize_config.json, quant_config.json: the core's
// configFileNames()), absent here. Each is a syscall, a few µs on this VM: together about
// the floor's whole cost on a 1 KiB header. open(path) now makes the first alone (the
// others on the model's first use, e.g. `.info`, or at open for a quantized model).
const CONFIG_FILES = JSON.parse((await loadCoreForCli()).configFileNames());
const floorStats = (path, n) => {
  const read = floorSync(path, n);
  return async () => {
    statSync(path);
    for (const c of CONFIG_FILES) statSync(join(dirname(path), c), { throwIfNoEntry: false });
    await read();
  };
};
const hubParse = (f, n) => async () => {
  const r = await parseSafetensorsMetadata({ repo: 'bench/model', path: f.path.split('/').pop(), hubUrl });
  expect(Object.keys(r.header).length - 1, n, 'parseSafetensorsMetadata');
};
const ggufParse = (src, n, local) => async () => {
  const r = await gguf(src, local ? { allowLocalFile: true } : {});
  expect(r.tensorInfos.length, n, 'gguf()');
};

// ---- timing ---------------------------------------------------------------------------
// One timed run: `inner` calls back to back, per-call ms.
async function run(fn, inner) {
  const t0 = now();
  for (let i = 0; i < inner; i++) await fn();
  return (now() - t0) / inner;
}

// Each round runs the contenders in a new order (a seeded shuffle): the garbage one
// contender leaves is collected while the next runs, so a fixed cyclic order (rotated by
// one each round, as before) always charged the same neighbour with it: two copies of the
// same open() measured 3.1x and 6.7x the floor side by side.
let seed = 17;
const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
function order(n) {
  const o = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) { const j = Math.floor(random() * (i + 1)); [o[i], o[j]] = [o[j], o[i]]; }
  return o;
}

// contenders: [{ name, fn }], the first is the reference. Returns rows with median ms and
// ratio to the reference (median of the per-round ratios).
async function compare(contenders) {
  for (const c of contenders) {  // warm-up (JIT, WASM tier-up, page cache), then size the batch
    const t0 = now();
    let k = 0;
    while (k < 5 || now() - t0 < 200) { await c.fn(); k++; }
    c.inner = Math.max(1, Math.round(BATCH_MS / ((now() - t0) / k)));
    c.times = [];
  }
  const ratios = contenders.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    const t = new Array(contenders.length);
    for (const i of order(contenders.length)) {
      t[i] = await run(contenders[i].fn, contenders[i].inner);
      contenders[i].times.push(t[i]);
    }
    contenders.forEach((_, i) => ratios[i].push(t[i] / t[0]));
  }
  return contenders.map((c, i) => ({ name: c.name, ms: median(c.times), ratio: median(ratios[i]) }));
}

const fmtMs = (ms) => (ms < 1 ? ms.toFixed(3) : ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
const fmtRatio = (x) => `${x.toFixed(2)}×`;
function table(title, rows) {
  console.log(`\n${title}\n`);
  console.log('| input | contender | median ms | ratio to the first row |');
  console.log('| --- | --- | ---: | ---: |');
  for (const { input, rows: rs } of rows) {
    for (const r of rs) console.log(`| ${input} | ${r.name} | ${fmtMs(r.ms)} | ${fmtRatio(r.ratio)} |`);
  }
}

// How many HTTP requests one open costs each contender (untimed).
async function requests(fn) {
  await requestCount();
  await fn();
  return requestCount();
}

// ---- run ------------------------------------------------------------------------------
const cpu = readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1];
const version = (pkg) => JSON.parse(readFileSync(join(here, 'node_modules', pkg, 'package.json'), 'utf8')).version;
console.log(`- ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}; ${cpu} (${cpus().length} vCPUs); Node ${process.version}; `
  + `@huggingface/hub ${version('@huggingface/hub')}, @huggingface/gguf ${version('@huggingface/gguf')}`
  + `; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
console.log(`- ${ROUNDS} rounds per table, ${COLD_ROUNDS} for cold starts; each timed run repeats an open for ~${BATCH_MS} ms`);

const tensorCount = async (src) => { const m = await open(src); const n = m.info.tensors.length; await m.close(); return n; };

const local = [];
for (const f of want(1) ? st : []) {
  const n = await tensorCount(f.path);
  local.push({ input: `${f.label}, ${(f.headerBytes / 1024).toFixed(0)} KiB header`, rows: await compare([
    { name: 'fs.readSync ×2 + JSON.parse (floor)', fn: floorSync(f.path, n) },
    { name: 'fs.promises FileHandle.read ×2 + JSON.parse', fn: floorAsync(f.path, n) },
    { name: 'the floor + stat of the path and of its 3 config-file names', fn: floorStats(f.path, n) },
    { name: 'anamnesis open(path)', fn: amnOpen(f.path) },
    { name: 'anamnesis open(path) + .info', fn: amnInfo(f.path, n) },
  ]) });
}
if (want(1)) table('### 1. safetensors header, local file', local);

const remote = [];
const reqs = [];
for (const f of want(2) ? st : []) {
  const n = await tensorCount(f.path);
  const url = urlOf(f);
  remote.push({ input: `${f.label}, ${(f.headerBytes / 1024).toFixed(0)} KiB header`, rows: await compare([
    { name: '@huggingface/hub parseSafetensorsMetadata', fn: hubParse(f, n) },
    { name: 'anamnesis open(url)', fn: amnOpen(url) },
    { name: 'anamnesis open(url) + .info', fn: amnInfo(url, n) },
    { name: 'anamnesis open(url, { fetch })', fn: amnOpen(url, viaFetch) },
  ]) });
  reqs.push(`${f.label}: parseSafetensorsMetadata ${await requests(hubParse(f, n))}, open(url) ${await requests(amnOpen(url))}`);
}
if (want(2)) {
  table('### 2. safetensors header over localhost HTTP', remote);
  console.log(`\nRequests per open: ${reqs.join('; ')}.`);
}

const ggRows = [];
const ggReqs = [];
for (const f of want(3) ? gg : []) {
  const n = await tensorCount(f.path);
  const url = urlOf(f);
  ggRows.push({ input: `${f.label}, local`, rows: await compare([
    { name: '@huggingface/gguf gguf(path)', fn: ggufParse(f.path, n, true) },
    { name: 'anamnesis open(path)', fn: amnOpen(f.path) },
    { name: 'anamnesis open(path) + .info', fn: amnInfo(f.path, n) },
  ]) });
  ggRows.push({ input: `${f.label}, HTTP`, rows: await compare([
    { name: '@huggingface/gguf gguf(url)', fn: ggufParse(url, n, false) },
    { name: 'anamnesis open(url)', fn: amnOpen(url) },
    { name: 'anamnesis open(url) + .info', fn: amnInfo(url, n) },
    { name: 'anamnesis open(url, { fetch })', fn: amnOpen(url, viaFetch) },
  ]) });
  ggReqs.push(`${f.label}: gguf() ${await requests(ggufParse(url, n, false))}, open(url) ${await requests(amnOpen(url))}`);
}
if (want(3)) {
  table('### 3. GGUF header, local and over localhost HTTP', ggRows);
  console.log(`\nRequests per open: ${ggReqs.join('; ')}.`);
}

// ---- 4. cold start ---------------------------------------------------------------------
// Wall time from spawn to exit of a fresh process, output discarded.
function wall(cmd, args, cwd) {
  return new Promise((res, rej) => {
    const t0 = now();
    const p = spawn(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', rej);
    p.on('exit', (code) => (code === 0 ? res(now() - t0) : rej(new Error(`${cmd} ${args.join(' ')}: exit ${code}\n${err}`))));
  });
}

async function coldCompare(contenders) {
  for (const c of contenders) { await c.run(); c.times = []; }  // once untimed: page cache, npx's own caches
  const ratios = contenders.map(() => []);
  for (let r = 0; r < COLD_ROUNDS; r++) {
    const t = new Array(contenders.length);
    for (const i of order(contenders.length)) {
      t[i] = await contenders[i].run();
      contenders[i].times.push(t[i]);
    }
    contenders.forEach((_, i) => ratios[i].push(t[i] / t[0]));
  }
  return contenders.map((c, i) => ({ name: c.name, ms: median(c.times), ratio: median(ratios[i]) }));
}

const small = gg[0].path;
const node = process.execPath;
const ggufCli = join(here, 'node_modules/@huggingface/gguf/dist/cli.js');
const amnCli = join(root, 'npm/dist/amn.cjs');  // the bin npm ships (bundled from npm/bin/amn.js)
const npx = join(dirname(node), 'npx');
const cold = !want(4) ? [] : [
  { input: 'tiny-Q4_K_M.gguf, `node BIN`', rows: await coldCompare([
    { name: 'gguf-view (node …/@huggingface/gguf/dist/cli.js)', run: () => wall(node, [ggufCli, small]) },
    { name: 'amn inspect (node npm/dist/amn.cjs)', run: () => wall(node, [amnCli, 'inspect', small]) },
    { name: 'node -e 0 (Node start-up alone)', run: () => wall(node, ['-e', '0']) },
  ]) },
  { input: 'tiny-Q4_K_M.gguf, `npx` (both installed in bench/js)', rows: await coldCompare([
    { name: 'npx gguf-view', run: () => wall(npx, ['--offline', 'gguf-view', small], here) },
    { name: 'npx amn inspect', run: () => wall(npx, ['--offline', 'amn', 'inspect', small], here) },
  ]) },
];
if (want(4)) table('### 4. Cold start: a fresh process inspecting a small GGUF (wall ms)', cold);
console.log(`\n- load average at the end ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
server.kill();
process.exit(0);
