// The Node side of the NumPy / PyTorch comparison (bench/numpy_torch.py runs it):
//   node bench/numpy_torch.mjs inspect FILE...  anamnesis npm (WASM): open(path) + model.info
//   node bench/numpy_torch.mjs npy FILE.npy     per NPY header: anamnesis open(path),
//                                               open(bytes), npyjs.parse(bytes), and
//                                               readFile + npyjs.parse
// Prints "key<TAB>file<TAB>seconds<TAB>tensors" lines (best of 5 after a warm-up), like
// bench_numpy_torch, for the driver to read.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { parse as npyjsParse } from 'npyjs';
import { open } from '../npm/node.js';

async function best(fn, runs = 5) {
  await fn();  // warm-up: WASM compile, JIT, page cache
  let min = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    min = Math.min(min, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return min;
}

// Many headers per timed run, so timer resolution and one slow event-loop turn do not matter.
async function perHeader(fn, headers) {
  return (await best(async () => { for (let i = 0; i < headers; i++) await fn(); })) / headers;
}

// A large file's Buffer owns its ArrayBuffer: hand that over instead of copying it.
const arrayBufferOf = (b) => (b.byteOffset === 0 && b.buffer.byteLength === b.byteLength
  ? b.buffer : b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

const print = (key, file, seconds, tensors) =>
  console.log(`${key}\t${basename(file)}\t${seconds.toFixed(9)}\t${tensors}`);

const [mode, ...files] = process.argv.slice(2);
if (mode === 'inspect') {
  for (const file of files) {
    let tensors = 0;
    const t = await best(async () => {
      const model = await open(file);
      tensors = model.info.tensors.length;
      await model.close();
    });
    print('wasm-info', file, t, tensors);
  }
} else if (mode === 'npy' && files.length === 1) {
  const file = files[0];
  const bytes = readFileSync(file);
  const name = basename(file);
  const check = (n) => { if (n !== 1) throw new Error('expected one tensor'); };
  print('wasm-npy-open', file, await perHeader(async () => {
    const model = await open(file);
    check(model.info.tensors.length);
    await model.close();
  }, 200), 1);
  print('wasm-npy-bytes', file, await perHeader(async () => {
    const model = await open(bytes, { name });
    check(model.info.tensors.length);
    await model.close();
  }, 200), 1);
  // npyjs needs the whole file in memory; its parse makes a typed-array view of the data.
  const whole = arrayBufferOf(bytes);
  print('npyjs-parse', file, await perHeader(async () => {
    const r = npyjsParse(whole);
    check(r.shape.length === 2 ? 1 : 0);
  }, 2000), 1);
  print('npyjs-read', file, await perHeader(async () => {
    const b = await readFile(file);
    const r = npyjsParse(arrayBufferOf(b));
    check(r.shape.length === 2 ? 1 : 0);
  }, 3), 1);
} else {
  console.error('usage: node bench/numpy_torch.mjs inspect FILE... | npy FILE.npy');
  process.exit(2);
}
