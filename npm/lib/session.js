// Drives the core's sans-IO Session: whenever it answers need_bytes, read the ranges
// (in parallel; the core already merged nearby ones, and a URL reads many in one
// multi-range request), copy them into WASM memory and call again.
import { AmnError, errorFromStatus, throwIfAborted } from './errors.js';

// A hostile or buggy input must not make us loop forever: each call gets a bounded
// number of need_bytes/need_files rounds (a sharded parse needs about three).
export const MAX_ROUNDS = 64;
const READ_CONCURRENCY = 8;
// Ranges up to this size share a multi-range request (headers, the parts of an archive);
// larger ones get a request each, fetched in parallel, as tensor data always was.
const MULTI_RANGE_MAX_BYTES = 1 << 20;

// The files declared to one Session, by the id addFile() returned.
export class FileTable {
  constructor(session) {
    this.session = session;
    this.byId = new Map();
    this.byName = new Map();
  }

  add(ref) {
    if (this.byName.has(ref.name)) return this.byName.get(ref.name);
    const id = this.session.addFile(ref.name, ref.size);
    if (typeof id !== 'number') throw new AmnError('internal', `addFile(${ref.name}) returned no id`);
    this.byId.set(id, ref);
    this.byName.set(ref.name, id);
    return id;
  }

  has(name) { return this.byName.has(name); }

  // The model is open: each file may stop reading ahead (a URL's first request).
  settle() {
    for (const ref of this.byId.values()) ref.settle?.();
  }

  // Synchronous closes (a path's descriptor) cost no promise; others are awaited together.
  async close() {
    const pending = [];
    for (const ref of this.byId.values()) {
      try {
        const p = ref.close?.();
        if (p) pending.push(p);
      } catch { /* closing is best effort, as allSettled made it */ }
    }
    if (pending.length > 0) await Promise.allSettled(pending);
  }
}

// Sorted, merged ranges per file: one read for bytes the core asked for in pieces.
export function coalesce(ranges) {
  if (ranges.length === 1) {  // the usual answer (a header's first read): nothing to merge
    const [r] = ranges;
    return r.length > 0 ? [{ file: r.file, offset: r.offset, length: r.length }] : [];
  }
  const sorted = [...ranges].filter((r) => r.length > 0)
    .sort((a, b) => a.file - b.file || a.offset - b.offset);
  const out = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && last.file === r.file && r.offset <= last.offset + last.length) {
      last.length = Math.max(last.length, r.offset + r.length - last.offset);
    } else {
      out.push({ file: r.file, offset: r.offset, length: r.length });
    }
  }
  return out;
}

// `n` bytes of WASM memory for the core to adopt (addBytes), or a limit error.
function allocate(M, n) {
  const p = M._malloc(n) >>> 0;  // pointers above 2 GiB come back negative
  if (p === 0) throw new AmnError('limit', `out of WASM memory allocating ${n} bytes`);
  return p;
}

// Hands the filled buffer at `p` to the core, which adopts it and frees it, whatever
// addBytes answers.
function adopt(session, file, offset, p, n) {
  const st = session.addBytes(file, offset, p, n);
  if (st && st.ok === false) throw errorFromStatus(st);
}

// Hands a copy of `bytes` to the core.
function give(M, session, file, offset, bytes) {
  const n = bytes.byteLength;
  const p = allocate(M, n);
  M.HEAPU8.set(bytes, p);        // read HEAPU8 after malloc: growth replaces it
  adopt(session, file, offset, p, n);
}

// Reads `range` of a file straight into the buffer the core adopts: `fill(put)` calls
// put(bytes, at) for its pieces in order, so no more than a piece of the range is outside
// WASM memory at a time (a 64 MiB layer that forget takes whole is not held twice by a
// browser tab, and a URL's body is not gathered into a fresh ArrayBuffer first).
async function readIntoCore(M, session, file, range, fill) {
  const n = range.length;
  const p = allocate(M, n);
  let got = 0;
  try {
    await fill((bytes, at) => {
      if (at + bytes.byteLength > n) throw new AmnError('internal', `read past the ${n} bytes asked for`);
      M.HEAPU8.set(bytes, p + at);  // HEAPU8 read at each put, after an await: growth replaces it
      got += bytes.byteLength;
    });
    if (got !== n) throw new AmnError('internal', `read ${got} of the ${n} bytes asked for`);
  } catch (err) {
    M._free(p);
    throw err;
  }
  adopt(session, file, range.offset, p, n);
}

// A range larger than the core's host read piece (hostReadPieceBytes), of a file whose reads
// reuse their buffers (a Blob: recycle()): read piece by piece.
const fillByPieces = (M, ref, range, signal) => async (put) => {
  const piece = M.hostReadPieceBytes();
  for (let k = 0; k < range.length; k += piece) {
    const part = await ref.read(range.offset + k, Math.min(piece, range.length - k), signal);
    put(part, k);
    ref.recycle(part);
  }
  throwIfAborted(signal);
};

// Reads what the core asked for (need_bytes) and hands it over. Returns a promise, or
// nothing when every range was read synchronously (a path's small reads: readSyncInto).
export function supplyBytes(M, session, files, needBytes, signal) {
  const ranges = coalesce(needBytes || []);
  if (ranges.length === 0) throw new AmnError('internal', 'the core asked for bytes but named no range');
  for (const r of ranges) {
    const ref = files.byId.get(r.file);
    if (!ref) throw new AmnError('internal', `the core asked for bytes of unknown file #${r.file}`);
    if (r.offset < 0 || r.offset + r.length > ref.size) {
      throw new AmnError('io', `${ref.name}: read of ${r.length} bytes at ${r.offset} is past the end (${ref.size} bytes)`, { offset: r.offset });
    }
  }
  const later = [];
  for (const r of ranges) {
    const ref = files.byId.get(r.file);
    if (!(ref.readSyncInto && r.length <= ref.syncReadMax)) { later.push(r); continue; }
    const p = allocate(M, r.length);
    try {
      ref.readSyncInto(r.offset, r.length, M.HEAPU8, p);  // HEAPU8 read after malloc: growth replaces it
    } catch (err) {
      M._free(p);
      throw err;
    }
    adopt(session, r.file, r.offset, p, r.length);
  }
  return later.length === 0 ? undefined : supplyLater(M, session, files, later, signal);
}

// The sniff window every parser reads first ([0, firstReadBytes(name)), the core's
// registry), handed to the core before the first parse when the file reads it
// synchronously (a path): the parse then needs no need_bytes round for it, about 4 µs of
// the ~29 µs open of a small header (docs/benchmarks.md). A window the file cannot read
// synchronously (a GGUF's 1 MiB) is left for the core to ask for.
// `id`: the file's, as files.add() returned it.
export function supplyFirstRead(M, session, files, id) {
  const ref = files.byId.get(id);
  if (!ref?.readSyncInto) return;
  const length = Math.min(M.firstReadBytes(ref.name), ref.size);
  if (length > 0 && length <= ref.syncReadMax) supplyBytes(M, session, files, [{ file: id, offset: 0, length }]);
}

async function supplyLater(M, session, files, ranges, signal) {
  // A file that reads several ranges in one request (a URL: HTTP multi-range) gets its
  // small ranges in batches of its maxRanges; large ones (tensor data) and the other
  // files' ranges are read a range at a time, READ_CONCURRENCY at once.
  const jobs = [];
  for (const r of ranges) {
    const ref = files.byId.get(r.file);
    const last = jobs[jobs.length - 1];
    const small = ref.readMany && r.length <= MULTI_RANGE_MAX_BYTES;
    if (small && last?.many && last.file === r.file && last.ranges.length < ref.maxRanges) last.ranges.push(r);
    else jobs.push({ file: r.file, ranges: [r], many: small });
  }
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const { file, ranges: batch } = jobs[next++];
      const ref = files.byId.get(file);
      throwIfAborted(signal);
      if (batch.length === 1 && ref.readTo) {  // a stream (a URL's body): its chunks go straight in
        const r = batch[0];
        await readIntoCore(M, session, file, r, async (put) => {
          await ref.readTo(r.offset, r.length, put, signal);
          throwIfAborted(signal);
        });
        continue;
      }
      if (batch.length === 1 && ref.recycle && batch[0].length > M.hostReadPieceBytes()) {
        await readIntoCore(M, session, file, batch[0], fillByPieces(M, ref, batch[0], signal));
        continue;
      }
      const parts = batch.length > 1 ? await ref.readMany(batch, signal)
        : [await ref.read(batch[0].offset, batch[0].length, signal)];
      throwIfAborted(signal);
      batch.forEach((r, i) => {
        give(M, session, file, r.offset, parts[i]);
        ref.recycle?.(parts[i]);  // copied into WASM memory: its buffer may take the next read
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, jobs.length) }, worker));
}

// Calls `step()` (parse / runPiece) until it succeeds, serving need_bytes, and
// need_files through `onNeedFiles`.
export async function drive(M, session, files, step, { signal, onNeedFiles, what }) {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    throwIfAborted(signal);
    const st = step();
    if (st.ok) return;
    if (st.code === 'need_bytes') {
      const pending = supplyBytes(M, session, files, st.needBytes, signal);
      if (pending) await pending;
    } else if (st.code === 'need_files' && onNeedFiles) {
      await onNeedFiles(st.needFiles || []);
    } else {
      throw errorFromStatus(st);
    }
  }
  throw new AmnError('internal', `${what}: still asking for data after ${MAX_ROUNDS} rounds`);
}
