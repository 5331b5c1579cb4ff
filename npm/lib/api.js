// The public API, built once per entry point (index.js for browsers, node.js for Node)
// from a core loader and the environment's extra sources and sinks.
import { AmnError } from './errors.js';
import { openModel } from './open.js';

export function makeApi({ instantiate, resolveExtra, openSink, transport = null }) {
  let core = null;  // one module, loaded lazily, shared by every model
  let ready = null;  // the module itself once loaded: open() takes it without a promise
  let initOptions = {};
  const loadCore = () => {
    core ||= instantiate(initOptions).then((M) => { ready = M; return M; }, (err) => {
      core = null;  // let a later call retry (e.g. after a network error)
      throw err instanceof AmnError ? err : new AmnError('internal', `cannot load the anamnesis WASM core: ${err.message}`, { cause: err });
    });
    return core;
  };
  const open = (source, options = {}) => openModel(() => ready ?? loadCore(), source, options, { resolveExtra, openSink, transport });
  return {
    /** Loads the WASM core now (optional); `options` may give wasmBinary or wasmUrl. */
    async init(options = {}) {
      if (!core) initOptions = options;
      await loadCore();
    },
    open,
    /** Compares two models (open Models, or sources open() takes) tensor by tensor:
     *  {identical, tensors: [{name, status, max_abs_diff, mae, rmse, cosine, snr_db, ...}]}
     *  (docs/json-schema.md "diff"); `text: true` adds the CLI's table as `text`. */
    diff: async (a, b, options = {}) => (await import('./diff.js')).diffModels(open, a, b, options),
    version: async () => (await loadCore()).version(),
    implementation: async () => (await loadCore()).activeImpl(),
    /** The schemes forget() knows, from the core: [{ name, producer, available }]. */
    forgetSchemes: async () => JSON.parse((await loadCore()).forgetSchemes()),
    // The loaded core itself, for the package's own Node CLI (bin/amn.js): not public API.
    loadCore,
  };
}
