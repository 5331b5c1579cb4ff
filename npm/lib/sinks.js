// Convert sinks every environment has: a WritableStream, or none (collect the parts).
// A sink adapter is { write(u8) -> Promise, close() -> Promise<result>, abort(err) }.
import { AmnError } from './errors.js';

export function streamSink(stream) {
  const writer = stream.getWriter();
  let bytes = 0;
  return {
    async write(chunk) { await writer.write(chunk); bytes += chunk.byteLength; },
    async close() { await writer.close(); return { bytes }; },
    async abort(err) { await writer.abort(err); },
  };
}

// No sink: keep the parts; `finish` joins them.
export function partsSink(finish) {
  let parts = [];
  return {
    async write(chunk) { parts.push(chunk); },
    async close() { const result = finish(parts); parts = []; return result; },
    async abort() { parts = []; },
  };
}

// Browser, no sink: fold the parts into a Blob every few MiB, so the JS heap holds one
// batch and the browser's blob storage (which may spill to disk) holds the rest.
const FOLD_BYTES = 32 * 1024 * 1024;
export function blobSink() {
  const type = 'application/octet-stream';
  let blob = new Blob([], { type });
  let pending = [];
  let pendingBytes = 0;
  const fold = () => {
    blob = new Blob([blob, ...pending], { type });
    pending = [];
    pendingBytes = 0;
  };
  return {
    async write(chunk) {
      pending.push(chunk);
      pendingBytes += chunk.byteLength;
      if (pendingBytes >= FOLD_BYTES) fold();
    },
    async close() { fold(); return blob; },
    async abort() { pending = []; blob = null; },
  };
}

export function toUint8Array(parts) {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.byteLength, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.byteLength; }
  return out;
}

export function isWritableStream(x) {
  return typeof WritableStream !== 'undefined' && x instanceof WritableStream;
}

// `collect` makes the sink used when there is none (a Blob, or in Node one Uint8Array).
export function openCommonSink(sink, collect) {
  if (sink === undefined || sink === null) return collect();
  if (isWritableStream(sink)) return streamSink(sink);
  throw new AmnError('invalid_argument', 'convert(): sink must be a WritableStream (or, in Node, a path or a Writable)');
}
