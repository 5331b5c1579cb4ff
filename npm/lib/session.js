// Drives the core's sans-IO Session: whenever it answers need_bytes, read the ranges
// (in parallel, adjacent ones coalesced), copy them into WASM memory and call again.
import { AmnError, errorFromStatus, throwIfAborted } from './errors.js';

// A hostile or buggy input must not make us loop forever: each call gets a bounded
// number of need_bytes/need_files rounds (a sharded parse needs about three).
export const MAX_ROUNDS = 64;
const READ_CONCURRENCY = 8;

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

  async close() {
    await Promise.allSettled([...this.byId.values()].map((ref) => ref.close?.()));
  }
}

// Sorted, merged ranges per file: one read for bytes the core asked for in pieces.
export function coalesce(ranges) {
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

// Hands `bytes` to the core. The core adopts the malloc'd pointer and frees it.
function give(M, session, file, offset, bytes) {
  const n = bytes.byteLength;
  const p = M._malloc(n) >>> 0;  // pointers above 2 GiB come back negative
  if (p === 0) throw new AmnError('limit', `out of WASM memory allocating ${n} bytes`);
  M.HEAPU8.set(bytes, p);        // read HEAPU8 after malloc: growth replaces it
  const st = session.addBytes(file, offset, p, n);
  if (st && st.ok === false) throw errorFromStatus(st);
}

export async function supplyBytes(M, session, files, needBytes, signal) {
  const ranges = coalesce(needBytes || []);
  if (ranges.length === 0) throw new AmnError('internal', 'the core asked for bytes but named no range');
  for (const r of ranges) {
    const ref = files.byId.get(r.file);
    if (!ref) throw new AmnError('internal', `the core asked for bytes of unknown file #${r.file}`);
    if (r.offset < 0 || r.offset + r.length > ref.size) {
      throw new AmnError('io', `${ref.name}: read of ${r.length} bytes at ${r.offset} is past the end (${ref.size} bytes)`, { offset: r.offset });
    }
  }
  let next = 0;
  const worker = async () => {
    while (next < ranges.length) {
      const r = ranges[next++];
      throwIfAborted(signal);
      const bytes = await files.byId.get(r.file).read(r.offset, r.length, signal);
      throwIfAborted(signal);
      give(M, session, r.file, r.offset, bytes);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, ranges.length) }, worker));
}

// Calls `step()` (parse / runPiece) until it succeeds, serving need_bytes, and
// need_files through `onNeedFiles`.
export async function drive(M, session, files, step, { signal, onNeedFiles, what }) {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    throwIfAborted(signal);
    const st = step();
    if (st.ok) return;
    if (st.code === 'need_bytes') {
      await supplyBytes(M, session, files, st.needBytes, signal);
    } else if (st.code === 'need_files' && onNeedFiles) {
      await onNeedFiles(st.needFiles || []);
    } else {
      throw errorFromStatus(st);
    }
  }
  throw new AmnError('internal', `${what}: still asking for data after ${MAX_ROUNDS} rounds`);
}
