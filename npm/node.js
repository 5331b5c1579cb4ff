// Node entry: the browser API plus paths, folders and FileHandles as sources, and
// paths (written atomically) and Node Writables as convert sinks.
import { readFile } from 'node:fs/promises';
import { makeApi } from './lib/api.js';
import { AmnError } from './lib/errors.js';
import { openNodeSink, resolveNodeSource } from './lib/node-io.js';

export { AmnError, ERROR_CODES } from './lib/errors.js';

async function instantiate({ wasmBinary, wasmModule } = {}) {
  const js = new URL('./dist/amn-core.js', import.meta.url);
  const wasm = new URL('./dist/amn-core.wasm', import.meta.url);
  let createAmnCore;
  let bytes = wasmBinary;
  let module = null;
  try {
    // A literal specifier, so the CLI's bundle (tools/bundle-cli.mjs) holds the glue.
    ({ default: createAmnCore } = await import('./dist/amn-core.js'));
    module = await wasmModule?.catch(() => null);
    if (!module) bytes ||= await readFile(wasm);
  } catch (err) {
    throw new AmnError('internal', `cannot load the anamnesis WASM core from ${new URL('.', js).pathname} `
      + `(${err.code || err.message}); build it: ninja -C build/wasm amn-core`, { cause: err });
  }
  if (module) {
    // Compiled already (bin/amn.js starts it before its imports): the glue only instantiates.
    let failed;
    const failure = new Promise((_, reject) => { failed = reject; });
    const instantiateWasm = (imports, receive) => {
      WebAssembly.instantiate(module, imports).then((instance) => receive(instance, module), failed);
      return {};
    };
    return Promise.race([createAmnCore({ instantiateWasm }), failure]);
  }
  // Node 20's fetch cannot read file: URLs, so the glue gets the bytes directly, as an
  // ArrayBuffer: the glue wraps what it gets in a new Uint8Array, which copies a Buffer
  // (tens of ms for the 3.6 MB module, a tenth of a cold `npx amn`) but only views an
  // ArrayBuffer.
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer?.byteLength;
  return createAmnCore({ wasmBinary: ArrayBuffer.isView(bytes) && whole ? bytes.buffer : bytes });
}

// URL reads go through node:http(s) with a keep-alive agent (lib/node-http.js, loaded on
// the first URL) unless options.fetch is given: a small request costs about half what
// Node's fetch does.
let nodeFetch = null;
const transport = async () => (nodeFetch ||= (await import('./lib/node-http.js')).nodeFetch);

const api = makeApi({ instantiate, resolveExtra: resolveNodeSource, openSink: openNodeSink, transport });

export const { open, diff, version, implementation, init, forgetSchemes } = api;
/** @internal The WASM core, for bin/amn.js (the command line, the output policy). */
export const loadCoreForCli = async ({ wasmModule } = {}) => {
  await api.init({ wasmModule });
  return api.loadCore();
};
