#!/usr/bin/env node
// amn for Node: the same verbs, options and output as the native `amn` (src/cli/main.cpp),
// running on the WASM core through the npm API.
import { readFile } from 'node:fs/promises';
import { realpath, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';
import { AmnError, implementation, open, version } from '../node.js';
import { isOllamaSpec, resolveOllama } from '../lib/ollama.js';

const DTYPES = ['bf16', 'f16', 'f32'];
const SHARDS = ['1', 'input'];
const HELP = `amn (anamnesis): inspect tensor files and recover full precision from them
Usage: amn [OPTIONS] SUBCOMMAND

Options:
  -h,--help                   Print this help message and exit
  --version                   Display program version information and exit

Subcommands:
  parse PATH [--json]         List every stored tensor record with its byte range
  inspect PATH [--json]       Summarise a model: dtypes, parameters, tensors (header only)
                              (alias: info)
  remember PATH [-o OUT] [--to bf16|f16|f32] [--force] [--no-sync] [-q]
          [--shards 1|input] [--max-shard-size SIZE]
                              Dequantize / cast to full precision, written as safetensors
                              (alias: dequantize; default --to bf16)
  convert PATH --to safetensors|gguf [--dtype bf16|f16|f32] [-o OUT] [--force] [--no-sync] [-q]
          [--shards 1|input] [--max-shard-size SIZE]
          [--gguf-kv key[:TYPE]=value ...] [--gguf-metadata FILE.json]
                              Convert a model to another format, streaming tensor by tensor

PATH is a model file, a folder of shards, a *.index.json or an http(s) URL.
Output defaults to <stem>-<dtype|converted>.<format> beside the input. A sharded
safetensors input gives a folder <stem>-<dtype|converted>/ of shards and an index
(same boundaries; --max-shard-size re-shards, --shards 1 or -o NAME.safetensors
writes one file). --no-sync skips the fsyncs (scratch outputs): still written to a
temporary name and renamed into place.
Formats: safetensors (single, sharded folder or *.index.json), GGUF (single or split),
ollama:<model>[:<tag>].
Docs: docs/cli.md, docs/js-api.md
`;

class UsageError extends Error {}

// Options each verb takes: name -> { key, value: true if it takes an argument, choices }.
const VERBS = {
  parse: { view: 'parse', options: { '--json': { key: 'json' } } },
  inspect: { view: 'inspect', options: { '--json': { key: 'json' } } },
  remember: {
    options: {
      '-o': { key: 'output', value: true }, '--output': { key: 'output', value: true },
      '--to': { key: 'dtype', value: true, choices: DTYPES },
      '--cast-all': { key: 'castAll' },
      '--shards': { key: 'shards', value: true, choices: SHARDS },
      '--max-shard-size': { key: 'maxShardSize', value: true },
      '--force': { key: 'force' }, '--no-sync': { key: 'noSync' }, '-q': { key: 'quiet' }, '--quiet': { key: 'quiet' },
    },
  },
  convert: {
    options: {
      '--to': { key: 'format', value: true, choices: ['safetensors', 'gguf'] },
      '--dtype': { key: 'dtype', value: true, choices: DTYPES },
      '--gguf-kv': { key: 'ggufKv', value: true, repeat: true },
      '--gguf-metadata': { key: 'ggufMetadataFile', value: true },
      '--cast-all': { key: 'castAll' },
      '--shards': { key: 'shards', value: true, choices: SHARDS },
      '--max-shard-size': { key: 'maxShardSize', value: true },
      '-o': { key: 'output', value: true }, '--output': { key: 'output', value: true },
      '--force': { key: 'force' }, '--no-sync': { key: 'noSync' }, '-q': { key: 'quiet' }, '--quiet': { key: 'quiet' },
    },
    required: { format: '--to' },
  },
};
const ALIASES = { info: 'inspect', dequantize: 'remember' };

function parseArgs(argv) {
  if (argv.length === 0) throw new UsageError('A subcommand is required');
  const first = argv[0];
  if (first === '-h' || first === '--help') return { help: true };
  if (first === '--version') return { version: true };
  const verb = ALIASES[first] || first;
  const spec = VERBS[verb];
  if (!spec) throw new UsageError(`unknown subcommand: ${first}`);
  const args = { verb, view: spec.view, dtype: verb === 'remember' ? 'bf16' : undefined };
  const positional = [];
  for (let i = 1; i < argv.length; i++) {
    let arg = argv[i];
    if (arg === '-h' || arg === '--help') return { help: true };
    if (arg === '--') { positional.push(...argv.slice(i + 1)); break; }
    if (!arg.startsWith('-') || arg === '-') { positional.push(arg); continue; }
    let value;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) { value = arg.slice(eq + 1); arg = arg.slice(0, eq); }
    else if (/^-[a-z]./.test(arg)) { value = arg.slice(2); arg = arg.slice(0, 2); }  // -oOUT
    const opt = spec.options[arg];
    if (!opt) throw new UsageError(`unknown option for ${verb}: ${arg}`);
    if (opt.value) {
      if (value === undefined) {
        if (i + 1 >= argv.length) throw new UsageError(`${arg} requires a value`);
        value = argv[++i];
      }
      if (opt.choices && !opt.choices.includes(value)) {
        throw new UsageError(`${arg}: '${value}' is not one of ${opt.choices.join(', ')}`);
      }
      if (opt.repeat) (args[opt.key] ??= []).push(value);
      else args[opt.key] = value;
    } else {
      if (value !== undefined) throw new UsageError(`${arg} takes no value`);
      args[opt.key] = true;
    }
  }
  if (positional.length === 0) throw new UsageError('PATH is required');
  if (positional.length > 1) throw new UsageError(`unexpected argument: ${positional[1]}`);
  args.path = positional[0];
  for (const [key, flag] of Object.entries(spec.required || {})) {
    if (args[key] === undefined) throw new UsageError(`${flag} is required`);
  }
  return args;
}

// "512 B", "60.5 KiB" (report/text.cpp human_bytes).
function humanBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < 5) { v /= 1024; u++; }
  return `${fixed1(v)} ${units[u]}`;
}

// printf("%.1f"): like toFixed(1), except that exact ties round to even (1.25 -> 1.2).
// v = bytes / 2^(10u) is exact, so v * 10 is a tie only when it truly is one.
function fixed1(v) {
  const t = v * 10;
  if (!Number.isInteger(t) && Number.isInteger(t * 2)) {
    const n = Math.floor(t);
    return ((n % 2 === 0 ? n : n + 1) / 10).toFixed(1);
  }
  return v.toFixed(1);
}

const isUrl = (s) => /^https?:\/\//i.test(s);

// Where the input lives and its stem, as local_files.cpp decides them.
async function inputPlace(path) {
  if (isOllamaSpec(path)) {  // outputs to the current folder, never into Ollama's blobs/ (local_files.cpp)
    const { blob, stem } = await resolveOllama(path);
    return { folder: '.', stem, local: true, inputFolder: dirname(blob) };
  }
  if (isUrl(path)) {
    const name = decodeURIComponent(new URL(path).pathname.split('/').filter(Boolean).pop() || 'model');
    return { folder: '.', stem: stemOf(name), local: false };
  }
  const st = await stat(path).catch(() => null);
  if (st?.isDirectory()) return { folder: path, stem: basename(join(process.cwd(), path)) || 'model', local: true, isFolder: true };
  return { folder: dirname(path), stem: stemOf(basename(path)), local: true };
}

function stemOf(name) {
  // The native CLI's list (local_files.cpp stem_of).
  for (const suffix of ['.safetensors.index.json', '.bin.index.json', '.pth.index.json', '.pt.index.json', '.index.json', '.safetensors']) {
    if (name.length > suffix.length && name.endsWith(suffix)) return name.slice(0, -suffix.length);
  }
  return basename(name, extname(name));
}

// One file or a folder of shards, as the native CLI's output_layout decides.
function outputLayout(args, format, sharded) {
  const sized = args.maxShardSize !== undefined;
  const asked = sized || args.shards === 'input';
  if (args.shards === '1') {
    if (sized) throw new AmnError('invalid_argument', '--max-shard-size and --shards 1 contradict each other');
    return { folder: false };
  }
  if (format !== 'safetensors') {
    if (asked) throw new AmnError('unsupported', 'sharded output is written as safetensors only (GGUF output is one file)');
    return { folder: false };
  }
  const namesFile = (args.output ?? '').endsWith('.safetensors');
  if (asked && namesFile) {
    throw new AmnError('invalid_argument', `${args.output} names a file: a sharded output is a folder (or pass --shards 1)`);
  }
  return { folder: asked || (sharded && !namesFile) };
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

// A one-line bar on stderr, only on a terminal (cli/progress.cpp).
function progressBar(label) {
  if (!process.stderr.isTTY) return { update() {}, clear() {} };
  let last = -1;
  return {
    update({ done, total }) {
      if (total === 0) return;
      const permille = Math.floor((done * 1000) / total);
      if (permille === last) return;
      last = permille;
      const filled = Math.floor((permille * 30) / 1000);
      const pct = String(Math.floor(permille / 10)).padStart(3);
      process.stderr.write(`\r${label} [${'#'.repeat(filled)}${' '.repeat(30 - filled)}] ${pct}%  ${humanBytes(done)} / ${humanBytes(total)}\x1b[K`);
    },
    clear() { if (last >= 0) process.stderr.write('\r\x1b[K'); },
  };
}

async function runReport(args) {
  const model = await open(args.path);
  try {
    // The core's own text for both: the very bytes the native amn prints.
    process.stdout.write(args.json ? model.infoJson : model.text(args.view));
  } finally {
    await model.close();
  }
}

async function runConvert(args) {
  const model = await open(args.path);
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const bar = progressBar(args.verb);
  try {
    const place = await inputPlace(args.path);
    const format = args.format || 'safetensors';
    const layout = outputLayout(args, format, model.info.sharded);
    const base = `${place.stem}-${args.dtype || 'converted'}`;
    let target = args.output;
    if (!target && layout.folder) {
      // A sharded output is a folder beside the input (beside the input folder, not in it).
      const where = place.isFolder ? dirname(resolve(place.folder)) : place.folder;
      target = where.endsWith('/') ? where + base : `${where}/${base}`;
    } else if (!target) {
      const name = `${base}.${format}`;
      // Spelled as the native CLI does (folder / name, "." for the current folder).
      target = place.folder.endsWith('/') ? place.folder + name : `${place.folder}/${name}`;
    }
    // Never write over one of the inputs, even with --force: inputs are read-only. A
    // folder target must not hold one either (replacing it would delete it).
    if (place.local) {
      const inputs = model.info.files.map((f) => join(place.inputFolder ?? place.folder, f.name));
      for (const input of inputs) {
        if (await sameFile(input, target)) throw new AmnError('invalid_argument', `${target} is an input of this conversion`);
        if (layout.folder && await inside(input, target)) {
          throw new AmnError('invalid_argument', `${target} holds an input of this conversion (${basename(input)})`);
        }
      }
    }
    let result;
    try {
      let ggufMetadata;
      if (args.ggufMetadataFile) {
        let text;
        try { text = await readFile(args.ggufMetadataFile, 'utf8'); } catch { throw new AmnError('io', `cannot open ${args.ggufMetadataFile}`); }
        ggufMetadata = text;  // the core parses it, with the native CLI's messages
      }
      result = await model.convert({
        to: format, ggufKv: args.ggufKv, ggufMetadata,
        dtype: args.dtype, castAll: Boolean(args.castAll), sink: target, overwrite: Boolean(args.force),
        sync: !args.noSync,
        shards: layout.folder ? 'input' : 1, maxShardSize: args.maxShardSize,
        onProgress: (p) => bar.update(p), signal: controller.signal,
      });
    } catch (err) {
      if (err instanceof AmnError && err.code === 'exists') {
        throw new AmnError('exists', `${target} already exists (use --force to replace it)`);
      }
      throw err;
    }
    bar.clear();
    if (!args.quiet && layout.folder) {
      const n = result.shards;
      process.stdout.write(`wrote ${target.length > 1 ? target.replace(/\/+$/, '') : target}/ (${n} shard${n === 1 ? '' : 's'}, ${model.info.tensors.length} tensors, ${humanBytes(result.bytes)})\n`);
    } else if (!args.quiet) {
      process.stdout.write(`wrote ${target} (${model.info.tensors.length} tensors, ${humanBytes(result.bytes)})\n`);
    }
  } finally {
    bar.clear();
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await model.close();
  }
}

async function main(argv) {
  let args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`amn: usage error: ${err.message}\nRun 'amn --help' for usage.\n`);
    return 2;
  }
  try {
    if (args.help) { process.stdout.write(HELP); return 0; }
    if (args.version) { process.stdout.write(`amn ${await version()} (kernels: ${await implementation()})\n`); return 0; }
    if (args.view) await runReport(args);
    else await runConvert(args);
    return 0;
  } catch (err) {
    const code = err instanceof AmnError ? err.code : 'internal';
    process.stderr.write(`amn: error [${code}]: ${err.message}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
