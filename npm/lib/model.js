// A parsed model over one core Session. Operations on a model run one at a time
// (the Session holds one plan), queued in call order.
import { AmnError, errorFromStatus, throwIfAborted } from './errors.js';
import { drive } from './session.js';

const TARGETS = ['bf16', 'f16', 'f32'];
const INDEX_NAME = 'model.safetensors.index.json';

// A Node folder path as a sharded output (lib/folder-sink.js). Loaded only when asked
// for, by a URL bundlers leave alone: a page never holds a path sink.
async function openFolderSink(path, options) {
  const url = new URL('./folder-sink.js', import.meta.url).href;
  const { openFolder } = await import(/* @vite-ignore */ url);
  return openFolder(path, options);
}
const ARRAY_TYPES = {
  BF16: Uint16Array, F16: Uint16Array, F32: Float32Array, F64: Float64Array,
  I32: Int32Array, I64: BigInt64Array,
};

function checkTarget(to, what) {
  if (to === undefined || to === null || to === '') return '';
  const t = String(to).toLowerCase();
  if (!TARGETS.includes(t)) {
    throw new AmnError('invalid_argument', `${what}: unknown dtype "${to}" (use bf16, f16 or f32)`);
  }
  return t;
}

function check(status) {
  if (status && status.ok === false) throw errorFromStatus(status);
}

export class Model {
  #M; #session; #files; #hooks; #queue = Promise.resolve(); #closed = false; #info = null;

  constructor(M, session, files, infoJson, hooks) {
    this.#M = M;
    this.#session = session;
    this.#files = files;
    this.#hooks = hooks;
    /** The model-info document as the core wrote it: the bytes `amn inspect --json` prints. */
    this.infoJson = infoJson;
  }

  /** The same document, parsed (docs/json-schema.md); parsed on first use, since a GGUF
   *  vocabulary can make it megabytes long. */
  get info() {
    this.#info ??= JSON.parse(this.infoJson);
    return this.#info;
  }

  /** The CLI's human-readable report: 'inspect' (default) or 'parse'. */
  text(kind = 'inspect') {
    if (kind !== 'inspect' && kind !== 'parse') {
      throw new AmnError('invalid_argument', `text(): unknown kind "${kind}" (use inspect or parse)`);
    }
    this.#assertOpen();
    return this.#session.renderText(kind);
  }

  /** One tensor's values, optionally cast to bf16/f16/f32. */
  async tensor(name, { to, signal } = {}) {
    const target = checkTarget(to, 'tensor()');
    return this.#exclusive(async () => {
      check(this.#session.planTensor(String(name), target));
      const plan = JSON.parse(this.#session.planInfo());
      const t = plan.tensors[0];
      const out = new Uint8Array(t.nbytes);
      let at = 0;
      await this.#eachPiece(signal, (bytes) => {
        if (at + bytes.byteLength > out.byteLength) throw new AmnError('internal', 'tensor output longer than planned');
        out.set(bytes, at);
        at += bytes.byteLength;
      });
      if (at !== out.byteLength) throw new AmnError('internal', `tensor output is ${at} bytes, planned ${out.byteLength}`);
      const Type = ARRAY_TYPES[t.dtype] || Uint8Array;
      return { name: t.name, dtype: t.dtype, shape: t.shape, data: new Type(out.buffer, 0, out.byteLength / Type.BYTES_PER_ELEMENT) };
    });
  }

  /** Alias kept from the design sketch: dequantize = tensor with a float target. */
  async dequantize(name, options = {}) {
    return this.tensor(name, { to: 'bf16', ...options });
  }

  /** Writes the whole model (safetensors or GGUF, optionally cast) to `sink`, streaming.
   *  A sharded safetensors output (the input's shards by default, `maxShardSize`, or
   *  `shards: 'input'`) goes to `openShard(name)` for each file, or in Node to a folder
   *  path, written atomically. */
  async convert({ to = 'safetensors', dtype, castAll = false, ggufKv, ggufMetadata, sink, overwrite = false,
    sync = true, shards, maxShardSize, openShard, onProgress, signal } = {}) {
    if (to !== 'safetensors' && to !== 'gguf') throw new AmnError('unsupported', `convert(): cannot write "${to}" (safetensors or gguf)`);
    const target = checkTarget(dtype, 'convert()') || null;
    const layout = this.#layout({ to, sink, shards, maxShardSize, openShard });
    const options = {
      to, dtype: target, cast_all: Boolean(castAll), gguf_kv: ggufKv ?? null,
      // GGUF KVs: `ggufKv` as CLI-style "key[:TYPE]=value" strings, `ggufMetadata` as an
      // object of {key: value | {type, value}} (the info JSON's details.kv shape), or
      // JSON text the core parses.
      gguf_metadata: ggufMetadata ?? null,
    };
    if (layout.folder) {
      return this.#exclusive(() => this.#convertShards(options, layout, { sink, overwrite, sync, openShard, onProgress, signal }));
    }
    return this.#exclusive(async () => {
      throwIfAborted(signal);
      // Open the sink first: an existing output is refused before any work. `sync: false`
      // (Node path sinks) skips the fsyncs, not the temporary name and the rename.
      const out = await this.#hooks.openSink(sink, { overwrite, sync: sync !== false, signal });
      let plan;
      try {
        check(this.#session.planConvert(JSON.stringify(options)));
        plan = JSON.parse(this.#session.planInfo());
      } catch (err) {
        await out.abort(err).catch(() => {});
        throw err;
      }
      return this.#writePlan(out, plan, this.#progress(plan.output_bytes, onProgress), signal);
    });
  }

  // One file, or a folder of shards? As the CLI decides (docs/cli.md): a sharded input
  // gives shards when the destination can hold several files (openShard, or a Node
  // folder path that does not end in .safetensors); `shards: 'input'` and `maxShardSize`
  // ask for shards; `shards: 1` for one file.
  #layout({ to, sink, shards, maxShardSize, openShard }) {
    if (shards !== undefined && shards !== null && shards !== 1 && shards !== 'input') {
      throw new AmnError('invalid_argument', `convert(): shards must be 'input' or 1, not ${JSON.stringify(shards)}`);
    }
    if (openShard !== undefined && typeof openShard !== 'function') {
      throw new AmnError('invalid_argument', 'convert(): openShard must be a function (name) => sink');
    }
    const sized = maxShardSize !== undefined && maxShardSize !== null;
    if (sized && shards === 1) throw new AmnError('invalid_argument', 'convert(): maxShardSize and shards: 1 contradict each other');
    const asked = sized || shards === 'input';
    if (to !== 'safetensors') {
      if (asked || openShard) throw new AmnError('unsupported', 'convert(): sharded output is written as safetensors only (GGUF output is one file)');
      return { folder: false };
    }
    // Only Node has folder paths; elsewhere a string sink meets the usual sink error.
    const node = typeof process !== 'undefined' && Boolean(process.versions?.node);
    const path = !node ? null : typeof sink === 'string' ? sink : (sink instanceof URL && sink.protocol === 'file:' ? sink : null);
    if (openShard && sink !== undefined && sink !== null) {
      throw new AmnError('invalid_argument', 'convert(): pass either sink or openShard, not both');
    }
    const namesFile = path !== null && String(path).endsWith('.safetensors');
    if (openShard) return { folder: true, single: shards === 1, maxShardSize };
    if (asked && (path === null || namesFile)) {
      throw new AmnError('invalid_argument', path === null
        ? 'convert(): a sharded output needs openShard (or, in Node, a folder path as sink)'
        : `convert(): ${path} names a file: a sharded output is a folder (or pass shards: 1)`);
    }
    const folder = shards !== 1 && path !== null && (asked || (this.info.sharded && !namesFile));
    return { folder, maxShardSize };
  }

  // Every shard, then the index, each through its own sink: openShard's, or a file in a
  // Node folder that is renamed into place only when all are written.
  async #convertShards(options, layout, { sink, overwrite, sync, openShard, onProgress, signal }) {
    throwIfAborted(signal);
    const request = layout.single ? options : { ...options, shards: 'input', max_shard_size: layout.maxShardSize ?? null };
    check(this.#session.planConvert(JSON.stringify(request)));
    const info = JSON.parse(this.#session.shardsInfo());
    const files = info ? info.files : [{ name: 'model.safetensors', output_bytes: JSON.parse(this.#session.planInfo()).output_bytes }];
    const folder = openShard
      ? { open: async (name) => this.#hooks.openSink(await openShard(name), { overwrite, sync: sync !== false, signal }), commit: async () => {}, abort: async () => {} }
      : await openFolderSink(sink, { overwrite, sync: sync !== false });
    const total = files.reduce((n, f) => n + f.output_bytes, 0);
    const progress = this.#progress(total, onProgress);
    const written = [];
    try {
      for (let k = 0; k < files.length; k++) {
        if (info) check(this.#session.selectShard(k));
        const plan = JSON.parse(this.#session.planInfo());
        const out = await folder.open(files[k].name);
        const output = await this.#writePlan(out, plan, progress, signal);
        written.push({ name: files[k].name, bytes: plan.output_bytes, output });
      }
      if (info?.index) {
        const bytes = new TextEncoder().encode(info.index);
        const out = await folder.open(INDEX_NAME);
        try {
          await out.write(bytes);
          throwIfAborted(signal);
          written.push({ name: INDEX_NAME, bytes: bytes.byteLength, output: await out.close() });
        } catch (err) {
          await out.abort(err).catch(() => {});
          throw err;
        }
      }
      throwIfAborted(signal);
      const path = await folder.commit();
      const result = { bytes: total, shards: files.length, files: written };
      if (path !== undefined) result.path = path;
      return result;
    } catch (err) {
      await folder.abort(err).catch(() => {});
      throw err;
    }
  }

  #progress(total, onProgress) {
    let done = 0;
    return (n) => { done += n; onProgress?.({ done, total }); };
  }

  // Writes the current plan (header, then every piece) to `out` and closes it; the sink
  // writes piece i while the core reads and runs piece i+1. Aborts `out` on failure.
  async #writePlan(out, plan, progress, signal) {
    let pending = Promise.resolve();
    let written = 0;
    const count = (n) => { written += n; progress(n); };
    try {
      const header = this.#session.outputHeader().slice();
      await out.write(header);
      count(header.byteLength);
      await this.#eachPiece(signal, async (bytes) => {
        await pending;
        pending = out.write(bytes).then(() => count(bytes.byteLength));
        pending.catch(() => {});  // handled at the next await; not an unhandled rejection
      });
      await pending;
      // header, tensors and any alignment padding
      if (written !== plan.output_bytes) throw new AmnError('internal', `wrote ${written} bytes, planned ${plan.output_bytes}`);
      throwIfAborted(signal);
      return await out.close();
    } catch (err) {
      await pending.catch(() => {});  // no write may still be running when the sink is aborted
      await out.abort(err).catch(() => {});
      throw err;
    }
  }

  /** Frees the core session and closes file handles. Safe to call twice. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    await this.#queue.catch(() => {});
    this.#session.delete();
    await this.#files.close();
  }

  // Runs every piece of the current plan; `take` receives a copy of each output.
  async #eachPiece(signal, take) {
    const s = this.#session;
    const count = s.pieceCount();
    try {
      for (let i = 0; i < count; i++) {
        this.#assertOpen();
        await drive(this.#M, s, this.#files, () => s.runPiece(i), { signal, what: `piece ${i}` });
        const bytes = s.pieceOutput().slice();  // a live view: copy before calling again
        s.releaseData();
        await take(bytes);
      }
    } finally {
      s.releaseData();
    }
  }

  #assertOpen() {
    if (this.#closed) throw new AmnError('invalid_argument', 'the model is closed');
  }

  #exclusive(fn) {
    this.#assertOpen();
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }
}
