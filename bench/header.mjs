// Header-parse benchmark: the same >= 5,000-tensor safetensors file inspected by
//   - anamnesis in WASM (npm package, Node, FileHandle range reads),
//   - @huggingface/hub's parseSafetensorsMetadata (the JS parser from npm), fed by a fetch
//     that answers its Range requests from the same file,
//   - plain JSON.parse of the header bytes (a floor for any JS parser).
// The native figure comes from build/bench/bench/bench_header (bench/run.sh runs both).
// Prints one markdown table row per contender: median ms over repeated runs.
import { mkdtempSync, openSync, readSync, closeSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bigHeaderFile } from './make_big_header.mjs';
import { open } from '../npm/node.js';
import { parseSafetensorsMetadata } from '@huggingface/hub';

const dir = mkdtempSync(join(tmpdir(), 'amn-bench-'));
const path = process.argv[2] ?? join(dir, 'big.safetensors');
const info = process.argv[2] ? null : bigHeaderFile(path);
const size = statSync(path).size;

function readRange(start, end) {
  const fd = openSync(path, 'r');
  const buf = Buffer.alloc(end - start);
  readSync(fd, buf, 0, buf.length, start);
  closeSync(fd);
  return buf;
}

// A fetch that serves Range requests from the file, as a hub would.
async function fileFetch(url, init = {}) {
  const range = new Headers(init.headers).get('Range');
  const m = /bytes=(\d+)-(\d+)?/.exec(range ?? '');
  const start = m ? Number(m[1]) : 0;
  const end = m && m[2] ? Math.min(Number(m[2]) + 1, size) : size;
  const body = readRange(start, end);
  return new Response(body, { status: m ? 206 : 200, headers: {
    'Content-Range': `bytes ${start}-${end - 1}/${size}`, 'Content-Length': String(body.length),
    'Accept-Ranges': 'bytes', 'Content-Type': 'application/octet-stream', ETag: '"bench"' } });
}

async function median(fn, runs = 15) {
  await fn();  // warm-up (module load, JIT)
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)];
}

let tensors = 0;
const wasmOpen = await median(async () => {
  const model = await open(path);
  model.close();
});
const wasm = await median(async () => {
  const model = await open(path);
  tensors = model.info.tensors.length;
  model.close();
});
const hub = await median(async () => {
  const r = await parseSafetensorsMetadata({ repo: 'bench/model', path: 'model.safetensors', fetch: fileFetch, computeParametersCount: true });
  if (Object.keys(r.header).length < 5000) throw new Error('hub parser saw too few tensors');
});
const n = Number(readRange(0, 8).readBigUInt64LE(0));
const plain = await median(async () => {
  const h = JSON.parse(readRange(8, 8 + n).toString('utf8'));
  if (Object.keys(h).length < 5000) throw new Error('too few');
});

console.log(`header: ${tensors} tensors, ${(n / 1024).toFixed(0)} KiB JSON, file ${(size / 2 ** 30).toFixed(1)} GiB (sparse)`);
console.log('| parser | median ms |');
console.log('| --- | ---: |');
console.log(`| anamnesis WASM (npm, Node): open (read + parse + validate) | ${wasmOpen.toFixed(2)} |`);
console.log(`| anamnesis WASM (npm, Node): open + model.info (JSON.parse of the info document) | ${wasm.toFixed(2)} |`);
console.log(`| @huggingface/hub parseSafetensorsMetadata | ${hub.toFixed(2)} |`);
console.log(`| JSON.parse of the header bytes only (no validation) | ${plain.toFixed(2)} |`);
if (info) console.log(`(${info.tensors} tensors generated)`);
