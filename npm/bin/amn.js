#!/usr/bin/env node
// amn for Node: the native `amn`'s command line, run on the WASM core. The command line
// itself (verbs, options, help, usage errors), output names and layouts, and every line
// printed come from the core (src/session), so both CLIs print the same bytes; this file
// does Node's I/O only.
import { readFileSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { basename, join, resolve, sep } from 'node:path';
import { setFlagsFromString } from 'node:v8';

// V8 validates a whole WASM module when it compiles it, though it compiles each function
// only when first called: validating the 3.8 MB core took ~6 ms of a cold `npx amn
// inspect` (~95 ms in all). This process only ever loads our own module, so each function
// is validated when it is first compiled instead (a flag V8 has had since 2019, Node >= 20.19
// in package.json). Set before the core is compiled (just below); the library leaves V8 alone.
setFlagsFromString('--wasm-lazy-validation');

// The core compiles on V8's background threads while this thread loads and runs the
// package's modules (imported below, after the compile starts) and the core's JS glue:
// ~4 % of a cold `npx amn inspect` (docs/benchmarks.md, "Cold start"). The bin npm ships
// is this file bundled with its imports (dist/amn.cjs, tools/bundle-cli.mjs).
let wasmModule = null;
try {
  wasmModule = WebAssembly.compile(readFileSync(new URL('../dist/amn-core.wasm', import.meta.url)));
  wasmModule.catch(() => {});  // a failure is reported where the core is loaded (node.js)
} catch { /* no module: node.js says so, with how to build it */ }
// Bound by start() (the end of this file) before main runs. No top-level await: the bundle
// is a CommonJS file (tools/bundle-cli.mjs), which Node starts a few ms sooner than an ES
// module.
let AmnError, loadCoreForCli, open, isOllamaSpec, DIFF_RAW, HASH_RAW, OUTPUT_PLAN, STATS_RAW, amnErrorOf;
const loading = Promise.all([
  import('../node.js'), import('../lib/sources.js'), import('../lib/model.js'), import('../lib/errors.js'),
]);

// A closed stdout (`npx amn inspect x | head`) ends the output quietly, as amn does.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

// Where the input lives (the core turns it into a stem and output folders).
async function inputPlace(M, path) {
  if (isOllamaSpec(path)) {  // outputs to the current folder, never into Ollama's blobs/
    const { resolveOllama } = await import('../lib/ollama.js');  // loaded only for ollama: inputs
    const { blob, stem } = await resolveOllama(path);
    return { place: { stem, folder: '.', folderOutputParent: '.' }, inputFolder: blob.slice(0, blob.lastIndexOf('/')), local: true };
  }
  if (M.isUrl(path)) return { place: { path, isFolder: false, absolute: '' }, local: false };
  const st = await stat(path).catch(() => null);
  const isFolder = Boolean(st?.isDirectory());
  const folder = isFolder ? path : (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) || '/' : '.');
  return { place: { path, isFolder, absolute: isFolder ? resolve(path) : '' }, inputFolder: folder, local: true };
}

// Is `file` inside the folder `dir` (or `dir` itself)?
async function inside(file, dir) {
  const real = (p) => realpath(p).catch(() => resolve(p));
  const [f, d] = await Promise.all([real(file), real(dir)]);
  return f === d || f.startsWith(d.endsWith(sep) ? d : d + sep);
}

async function sameFile(a, b) {
  const [x, y] = await Promise.all([stat(a).catch(() => null), stat(b).catch(() => null)]);
  return Boolean(x && y && x.dev === y.dev && x.ino === y.ino);
}

// The core's progress line on stderr, only on a terminal and not with -q.
function progressBar(M, label, quiet) {
  if (quiet || !process.stderr.isTTY) return { update() {}, clear() {} };
  let last = -1;
  return {
    update({ done, total }) {
      if (total === 0) return;
      const permille = Math.floor((done * 1000) / total);
      if (permille === last) return;
      last = permille;
      process.stderr.write(M.progressLine(label, done, total));
    },
    clear() { if (last >= 0) process.stderr.write('\r\x1b[K'); last = -1; },
  };
}

function check(M, json) {
  const r = JSON.parse(json);
  if (r.ok === false) throw new AmnError(r.code, r.message, { offset: r.offset });
  return r;
}

async function runReport(cmd) {
  const model = await open(cmd.input, { limits: cmd.limits });
  try {
    // The core's own text for both: the very bytes the native amn prints.
    process.stdout.write(cmd.json ? model.infoJson : model.text(cmd.verb));
  } finally {
    await model.close();
  }
}

// stats: the core computes and renders each tensor's statistics (the native amn's bytes).
async function runStats(cmd) {
  const model = await open(cmd.input, { limits: cmd.limits });
  try {
    const names = cmd.tensors.length ? cmd.tensors : model.statsNames;
    const all = [];
    for (let i = 0; i < names.length; i++) {
      const s = await model[STATS_RAW](names[i]);
      if (cmd.json) all.push(s.json);
      else process.stdout.write((i ? '\n' : '') + s.text);
    }
    if (cmd.json) process.stdout.write(`{"tensors":[${all.join(',')}]}\n`);
  } finally {
    await model.close();
  }
}

// hash: the core's digests and lines (gguf-hash's, naming the path as given).
async function runHash(cmd) {
  const model = await open(cmd.input, { limits: cmd.limits });
  try {
    const h = await model[HASH_RAW]({ ggufPath: cmd.ggufHash ? cmd.input : '', dequantized: cmd.dequantized });
    process.stdout.write(cmd.json ? h.json + '\n' : h.text);
  } finally {
    await model.close();
  }
}

// diff: the core's comparison, table or JSON, and its exit status (0 identical, 3 not).
async function runDiff(cmd) {
  const a = await open(cmd.input, { limits: cmd.limits });
  try {
    const b = await open(cmd.other, { limits: cmd.limits });
    try {
      const d = await a[DIFF_RAW](b, { exactNames: cmd.exactNames });
      process.stdout.write(cmd.json ? d.json + '\n' : d.text);
      return d.exitStatus;
    } finally {
      await b.close();
    }
  } finally {
    await a.close();
  }
}

async function runConvert(M, cmd) {
  const req = cmd.request;
  const model = await open(cmd.input, { limits: cmd.limits });
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const bar = progressBar(M, cmd.verb, req.quiet);
  try {
    const where = await inputPlace(M, cmd.input);
    // The model's plan: remember's default name depends on what the model holds.
    const plan = model[OUTPUT_PLAN]({
      request: req, surface: 'cli', shardedInput: model.info.sharded, destination: 'path', place: where.place,
    });
    const target = plan.target;
    // Never write over one of the inputs, even with --force: inputs are read-only. A
    // folder target must not hold one either (replacing it would delete it).
    if (where.local) {
      for (const f of model.info.files) {
        const input = join(where.inputFolder, f.name);
        if (await sameFile(input, target)) check(M, M.outputRefusal('input', target, f.name));
        if (plan.folder && await inside(input, target)) check(M, M.outputRefusal('holds', target, basename(input)));
      }
    }
    if (cmd.verb === 'forget') {
      let result;
      const like = req.like ? await open(req.like, { limits: cmd.limits }) : null;
      try {
        // The core's request as parsed from the command line: its keys are forget()'s
        // option names (null: not given), so a new option needs no line here. --like REF is
        // opened above; --imatrix FILE is read from disk and named as given (the output's
        // quantize.imatrix.file).
        result = await model.forget({
          ...req, like, sink: target, overwrite: req.force, onProgress: (p) => bar.update(p), signal: controller.signal,
        });
      } catch (err) {
        if (err instanceof AmnError && err.code === 'exists') check(M, M.outputRefusal('exists', target, ''));
        // A reference or an importance matrix that does not fit is a misuse, as in the native amn (exit 2).
        if ((like || req.imatrix) && err instanceof AmnError && err.code === 'invalid_argument') err.usage = true;
        // A misfit option named as the native amn names it ("--tensor-type: ..."); its
        // file-reading errors (an imatrix's parse) are worded alike already.
        if (err instanceof AmnError && err.code === 'invalid_argument') err.message = M.cliSpelled(err.message);
        throw err;
      } finally {
        await like?.close();
      }
      bar.clear();
      for (const w of result.lethe.warnings) process.stderr.write(`amn: warning: ${w}\n`);
      if (cmd.json) {
        process.stdout.write(result.letheJson + '\n');
      } else if (!req.quiet) {
        process.stdout.write(M.wroteLine(target, plan.folder, result.shards ?? 1, result.tensors, result.bytes));
        process.stdout.write(result.letheText);
      }
      return;
    }
    let ggufMetadata = req.ggufMetadata ?? undefined;
    if (req.ggufMetadataFile) {
      // Read as forget() reads its files (node-io.js): the native CLI's words on failure.
      const { readNodeFile } = await import('../lib/node-io.js');
      ggufMetadata = new TextDecoder().decode(await readNodeFile(req.ggufMetadataFile));
    }
    let result;
    try {
      result = await model.convert({
        to: req.to, dtype: req.dtype ?? undefined, castAll: req.castAll, ggufKv: req.ggufKv, ggufMetadata,
        sink: target, overwrite: req.force, sync: req.sync,
        shards: req.shards ?? undefined, maxShardSize: req.maxShardSize ?? undefined,
        splitMaxSize: req.splitMaxSize ?? undefined, splitMaxTensors: req.splitMaxTensors ?? undefined, keepSplit: req.keepSplit,
        onProgress: (p) => bar.update(p), signal: controller.signal,
      });
    } catch (err) {
      if (err instanceof AmnError && err.code === 'exists') check(M, M.outputRefusal('exists', target, ''));
      throw err;
    }
    bar.clear();
    if (!req.quiet) {
      process.stdout.write(M.wroteLine(target, plan.folder, result.shards ?? 1, result.tensors, result.bytes));
    }
  } finally {
    bar.clear();
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await model.close();
  }
}

async function main(argv) {
  let M;
  try {
    M = await loadCoreForCli({ wasmModule });
    const cmd = JSON.parse(M.parseCommandLine(argv.map((word) => `${word}\0`).join('')));
    switch (cmd.kind) {
      case 'help': process.stdout.write(cmd.text); return 0;
      case 'version': process.stdout.write(M.versionText(M.activeImpl())); return 0;
      case 'usage_error': process.stderr.write(M.usageErrorText(cmd.text)); return 2;
      case 'error': throw new AmnError(cmd.code, cmd.message);
      default: break;
    }
    if (cmd.verb === 'parse' || cmd.verb === 'inspect') await runReport(cmd);
    else if (cmd.verb === 'stats') await runStats(cmd);
    else if (cmd.verb === 'hash') await runHash(cmd);
    else if (cmd.verb === 'diff') return await runDiff(cmd);
    else await runConvert(M, cmd);
    return 0;
  } catch (err) {
    if (err?.usage) {
      process.stderr.write(M.usageErrorText(err.message));
      return 2;
    }
    const code = amnErrorOf(err)?.code ?? 'internal';  // an AbortError carries its AmnError as cause
    process.stderr.write(`amn: error [${code}]: ${err.message}\n`);
    return 1;
  }
}

async function start() {
  const [node, sources, model, errors] = await loading;
  ({ AmnError, loadCoreForCli, open } = node);
  ({ isOllamaSpec } = sources);
  ({ DIFF_RAW, HASH_RAW, OUTPUT_PLAN, STATS_RAW } = model);
  ({ amnErrorOf } = errors);
  process.exitCode = await main(process.argv.slice(2));
}

start();
