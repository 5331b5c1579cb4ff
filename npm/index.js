// Browser (and default) entry: the core is fetched from dist/ next to this file.
// `new URL('./dist/…', import.meta.url)` is the pattern bundlers (Vite) rewrite to an asset.
import { makeApi } from './lib/api.js';
import { resolveSource } from './lib/open.js';
import { blobSink, openCommonSink } from './lib/sinks.js';

export { AmnError, ERROR_CODES } from './lib/errors.js';

async function instantiate({ wasmBinary, wasmUrl } = {}) {
  const { default: createAmnCore } = await import('./dist/amn-core.js');
  const url = String(wasmUrl || new URL('./dist/amn-core.wasm', import.meta.url));
  // Emscripten streams (instantiateStreaming) from the URL locateFile returns.
  return createAmnCore(wasmBinary ? { wasmBinary } : { locateFile: (file) => (file.endsWith('.wasm') ? url : file) });
}

// In a page, a string that is not an absolute http(s) URL is relative to the page.
async function resolvePageRelative(source, options) {
  if (typeof source !== 'string' || !globalThis.location?.href) return null;
  return resolveSource(new URL(source, globalThis.location.href), options, null);
}
resolvePageRelative.accepts = ', or a URL relative to the page';

const api = makeApi({
  instantiate,
  resolveExtra: resolvePageRelative,
  openSink: async (sink) => openCommonSink(sink, blobSink),
});

export const { open, diff, version, implementation, init, forgetSchemes } = api;
