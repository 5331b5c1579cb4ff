// The page's Web Worker: it owns the open model and runs the WASM core, so parsing and
// converting never block the UI. One job runs at a time (jobs queue); `cancel` messages
// bypass the queue and abort the job they name.
//
// Messages in:  { type: 'open',    id, source: { files: File[] } | { url } }
//               { type: 'convert', id, to, dtype, castAll, fileHandle? }   (to: 'safetensors' | 'gguf';
//                                                            dtype '' keeps; FileSystemFileHandle)
//               { type: 'convertShards', id, dtype, castAll, dirHandle? }   a sharded model as
//                                                            its shards + index (FileSystemDirectoryHandle)
//               { type: 'forget',  id, scheme, to?, pure?, blocksize?, doubleQuant?, bits?, groupSize?, skip?,
//                 imatrix? (a File), tensorType?, tensorTypeFile? (a File), allowRequantize? }  quantized, as a
//                                                            download, with its Lethe report
//               { type: 'forgetShards', id, ...forget's, dirHandle? }  the same for a sharded model: its
//                                                            shards, index and config.json
//               { type: 'openReference', id, files }   forget's reference (like: true in forget's
//                                                            options follows it), open until replaced
//               { type: 'tensorStats', id, name }   one tensor's summary and heatmap, streamed
//                                                            by the core (tensor-stats.js), with progress
//               { type: 'compare', id, source }   the open model (A) against another
//                                                            (opened here, closed after): diff()
//               { type: 'cancel',  id }
// Messages out: { type: 'progress', id, done, total }
//               { type: 'result',   id, value }
//               { type: 'error',    id, error: { code, message, offset } }
// New operations are one more handler.

import { diff, forgetSchemes, init, open } from 'anamnesis';
import { summaryOf } from './tensor-stats.js';

const PROGRESS_INTERVAL_MS = 100;
const FOLD_BYTES = 8 * 1024 * 1024;
const SMALL_CHUNK = 1024 * 1024;

// Load the core now, not at the first open: the page keeps working if the network goes
// away after it has loaded. A failure here is reported by the first open() instead.
init().catch(() => {});

let model = null;
let reference = null;  // forget's --like REF, closed with the model it was chosen for
let queue = Promise.resolve();
const controllers = new Map();

const handlers = {
  async open({ source }, { signal }) {
    await closeReference();
    await closeModel();
    const input = source.url ?? (source.files.length === 1 ? source.files[0] : source.files);
    model = await open(input, { signal });
    // Default download names, from the core's rule (the CLIs' names), for every choice.
    // Whether a conversion is a folder of shards is the core's rule too (outputFolders).
    const outputNames = {};
    const outputFolders = {};
    for (const to of ['safetensors', 'gguf']) {
      for (const dtype of ['keep', 'bf16', 'f16', 'f32']) {
        const options = { to, dtype: dtype === 'keep' ? undefined : dtype };
        outputNames[`${to}:${dtype}`] = model.outputName(options);
        outputFolders[`${to}:${dtype}`] = model.outputLayout(options).folder;
      }
    }
    const schemes = await forgetSchemes();
    // GGUF rows (to: 'gguf', a ggml type as name) are keyed "forget:gguf:Q4_K".
    // A forget whose model is several files (a sharded input) is saved as a folder, as
    // convert's shards are: the core's answer again.
    for (const s of schemes) {
      const key = `forget:${s.to ? `${s.to}:` : ''}${s.name}`;
      outputNames[key] = model.outputName({ scheme: s.name, to: s.to });
      if (s.available) outputFolders[key] = model.outputLayout({ scheme: s.name, to: s.to }).sharded;
    }
    // llama-quantize's --keep-split: a folder of files for a split GGUF input, else one file.
    outputFolders.keepSplit = model.outputLayout({ to: 'gguf', keepSplit: true }).folder;
    return { ...model.info, outputNames, outputFolders, forgetSchemes: schemes };
  },

  // Quantizes the model into a Blob built as the bytes arrive (one safetensors or GGUF file), and
  // returns it with the Lethe report (what was lost, per tensor).
  // `options` are model.forget()'s, as the page's form set them (forget.js).
  async forget(options, { signal, progress }) {
    if (!model) throw { code: 'invalid_argument', message: 'No model is open.' };
    options = withReference(options);
    const target = new BlobCollector();
    const sink = new WritableStream({ write: (chunk) => target.write(chunk) });
    let result;
    try {
      result = await model.forget({ ...options, sink, signal, onProgress: progress });
    } catch (err) {
      await target.abort();
      throw err;
    }
    const blob = target.finish();
    return { blob, bytes: blob.size, lethe: result.lethe };
  },

  // Streams the converted model into a file chosen by the user (File System Access) or,
  // by default, into a Blob built as the bytes arrive; the Blob is handed to the page,
  // which downloads it through an object URL.
  async convert({ to = 'safetensors', dtype, castAll = false, fileHandle }, { signal, progress }) {
    if (!model) throw { code: 'invalid_argument', message: 'No model is open.' };
    const target = fileHandle ? await fileHandle.createWritable() : new BlobCollector();
    // The core writes into this stream; what happens to the bytes, and the final commit
    // or discard, stays here whatever the package does with the stream itself.
    const sink = new WritableStream({ write: (chunk) => target.write(chunk) });
    try {
      // No dtype keeps every tensor's dtype (GGUF block types are copied through).
      await model.convert({ to, dtype: dtype || undefined, castAll, sink, signal, onProgress: progress });
    } catch (err) {
      await target.abort?.().catch(() => {});
      throw err;
    }
    if (fileHandle) {
      await target.close();
      return { saved: true };
    }
    const blob = target.finish();
    return { blob, bytes: blob.size };
  },

  // A sharded model converted to safetensors shards + index (the input's boundaries).
  async convertShards({ dtype, castAll = false, dirHandle }, { signal, progress }) {
    return intoFolder(dirHandle, (openShard) => model.convert({ dtype: dtype || undefined, castAll, openShard, signal, onProgress: progress }));
  },

  // A sharded model quantized: its shards, the index and config.json, with the Lethe report.
  async forgetShards({ dirHandle, ...options }, { signal, progress }) {
    options = withReference(options);
    let lethe;
    const out = await intoFolder(dirHandle, async (openShard) => {
      const result = await model.forget({ ...options, openShard, signal, onProgress: progress });
      lethe = result.lethe;
      return result;
    });
    return { ...out, lethe };
  },

  // forget's reference model: what it holds, and what forgetting like it writes (the
  // core's likeFormat: GGUF for a GGUF reference; then the core's name and layout).
  async openReference({ files }, { signal }) {
    if (!model) throw { code: 'invalid_argument', message: 'No model is open.' };
    await closeReference();
    reference = await open(files.length === 1 ? files[0] : files, { signal });
    const { format, logical, tensors } = reference.info;
    const to = reference.likeFormat;
    const kinds = format === 'gguf' ? [...new Set(tensors.map((t) => t.dtype))]
      : [...new Set((logical ?? []).map((l) => (l.variant ? `${l.scheme} (${l.variant})` : l.scheme)))];
    return {
      format, to, kinds, outputName: model.outputName({ scheme: '', to }),
      sharded: to !== 'gguf' && model.outputLayout({ scheme: '', to }).sharded,
    };
  },

  // The open model against a second one, both read piece by piece by the core; the
  // second is closed again before the result goes back.
  async compare({ source }, { signal, progress }) {
    if (!model) throw { code: 'invalid_argument', message: 'No model is open.' };
    const input = source.url ?? (source.files.length === 1 ? source.files[0] : source.files);
    const other = await open(input, { signal });
    try {
      return await diff(model, other, { signal, onProgress: progress });
    } finally {
      await other.close().catch(() => {});
    }
  },

  // One tensor's summary: the core streams it piece by piece, twice (statistics, then the
  // histogram), and returns only numbers — the tab never holds the tensor (docs/web.md,
  // "Bounded detail"). Progress is one step per piece and pass.
  async tensorStats({ name }, { signal, progress }) {
    if (!model) throw { code: 'invalid_argument', message: 'No model is open.' };
    const stored = model.info.tensors.find((t) => t.name === name);
    const core = await model.stats(name, { detail: true, signal, onProgress: progress });
    return { name, storedDtype: stored?.dtype ?? core.dtype, shape: core.shape, ...summaryOf(core) };
  },
};

// Runs `write(openShard)`, a conversion into several files. Into a folder the user picked:
// every file is written through createWritable() and committed only after all of them are
// complete, so a failure or a cancel commits nothing (and removes the entries this job
// created). Otherwise each file becomes a Blob the page downloads.
async function intoFolder(dirHandle, write) {
  if (!model) throw { code: 'invalid_argument', message: 'No model is open.' };
  const files = [];  // { name, target, created }
  const openShard = async (name) => {
    let target;
    let created = false;
    if (dirHandle) {
      created = !await dirHandle.getFileHandle(name).then(() => true, () => false);
      target = await (await dirHandle.getFileHandle(name, { create: true })).createWritable();
    } else {
      target = new BlobCollector();
    }
    files.push({ name, target, created });
    // Closing this stream commits nothing: the commit is below, once every file is done.
    return new WritableStream({ write: (chunk) => target.write(chunk) });
  };
  let result;
  try {
    result = await write(openShard);
    if (dirHandle) for (const f of files) await f.target.close();
  } catch (err) {
    for (const f of files) await f.target.abort?.().catch(() => {});
    if (dirHandle) for (const f of files) if (f.created) await dirHandle.removeEntry(f.name).catch(() => {});
    throw err;
  }
  const { shards, index } = result;
  if (dirHandle) return { saved: files.map((f) => f.name), folder: dirHandle.name, shards, index };
  return { files: files.map((f) => ({ name: f.name, blob: f.target.finish() })), shards, index };
}

// Collects output into a Blob without keeping a second copy: small chunks are copied and
// batched; every few MiB they are folded into the Blob (which references, not copies,
// the Blob it grows from), so the JS heap holds at most one batch.
class BlobCollector {
  constructor() {
    this.blob = new Blob([], { type: 'application/octet-stream' });
    this.pending = [];
    this.pendingBytes = 0;
  }

  write(chunk) {
    const bytes = chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk);
    // A small chunk may be a view the producer reuses; copy it now. A large one goes
    // into the Blob at once, before write() returns.
    this.pending.push(bytes.byteLength < SMALL_CHUNK ? bytes.slice() : bytes);
    this.pendingBytes += bytes.byteLength;
    if (this.pendingBytes >= FOLD_BYTES || bytes.byteLength >= SMALL_CHUNK) this.fold();
  }

  fold() {
    if (this.pending.length === 0) return;
    this.blob = new Blob([this.blob, ...this.pending], { type: 'application/octet-stream' });
    this.pending = [];
    this.pendingBytes = 0;
  }

  finish() {
    this.fold();
    return this.blob;
  }

  async abort() {
    this.pending = [];
    this.blob = null;
  }
}

// forget's options with `like: true` replaced by the open reference.
function withReference(options) {
  if (!options.like) return options;
  if (!reference) throw { code: 'invalid_argument', message: 'No reference model is open.' };
  return { ...options, like: reference };
}

async function closeReference() {
  const closing = reference;
  reference = null;
  await closing?.close().catch(() => {});
}

async function closeModel() {
  const closing = model;
  model = null;
  try {
    await closing?.close();
  } catch {
    // A model that fails to close is gone either way.
  }
}

// AmnError (and our own { code, message }) keep their code; a DOMException from the
// browser's file APIs (permission, quota, a file that changed) is an io error.
function plainError(err) {
  if (err?.name === 'AbortError') return { code: 'cancelled', message: 'Cancelled.', offset: -1 };
  let code = 'internal';
  if (typeof err?.code === 'string') code = err.code;
  else if (err instanceof DOMException) code = 'io';
  return {
    code,
    message: String(err?.message ?? err),
    offset: typeof err?.offset === 'number' ? err.offset : -1,
  };
}

function throttledProgress(id) {
  let last = 0;
  return ({ done, total }) => {
    const now = performance.now();
    if (done < total && now - last < PROGRESS_INTERVAL_MS) return;
    last = now;
    self.postMessage({ type: 'progress', id, done, total });
  };
}

self.addEventListener('message', (event) => {
  const message = event.data;
  if (message.type === 'cancel') {
    controllers.get(message.id)?.abort();
    return;
  }
  const handler = handlers[message.type];
  const { id } = message;
  const controller = new AbortController();
  controllers.set(id, controller);
  queue = queue.then(async () => {
    try {
      if (!handler) throw { code: 'invalid_argument', message: `Unknown request "${message.type}".` };
      if (controller.signal.aborted) throw { code: 'cancelled', message: 'Cancelled.' };
      const value = await handler(message, { signal: controller.signal, progress: throttledProgress(id) });
      self.postMessage({ type: 'result', id, value });
    } catch (err) {
      self.postMessage({ type: 'error', id, error: plainError(err) });
    } finally {
      controllers.delete(id);
    }
  });
});
