// A parsed model over one core Session. Operations on a model run one at a time
// (the Session holds one plan), queued in call order.
import { AmnError, errorFromStatus, throwIfAborted } from './errors.js';
import { MAX_ROUNDS, drive, supplyBytes } from './session.js';

// A Node path sink (a string or a file: URL), or null: only Node has folder paths;
// elsewhere a string sink meets the usual sink error.
function nodePath(sink) {
  const node = typeof process !== 'undefined' && Boolean(process.versions?.node);
  if (!node) return null;
  if (typeof sink === 'string') return sink;
  return sink instanceof URL && sink.protocol === 'file:' ? sink : null;
}

// A Node-only module of this folder, loaded when first needed by a URL bundlers leave
// alone: a page never needs one. (The CLI's bundle, tools/bundle-cli.mjs, makes each
// nodeOnly('./x.js') an import('./x.js'): keep the argument a literal.)
const nodeOnly = (file) => import(/* @vite-ignore */ new URL(file, import.meta.url).href);

// A Node folder path as a sharded output (lib/folder-sink.js): a page never holds a path sink.
async function openFolderSink(path, options) {
  const { openFolder } = await nodeOnly('./folder-sink.js');
  return openFolder(path, options);
}
// A file forget() reads whole (`option`: 'imatrix', 'tensorTypeFile'): its bytes and the
// name the output records (quantize.imatrix.file, as llama-quantize records the path it
// was given): bytes (Uint8Array, ArrayBuffer: named `name`, default `option`), a Blob or
// File (its name), or in Node a path or file: URL (read from disk, named as given).
async function fileInput(value, option, name) {
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) {
    return { bytes: new Uint8Array(value), name: name ?? option };
  }
  if (typeof Blob !== 'undefined' && value instanceof Blob) {
    return { bytes: new Uint8Array(await value.arrayBuffer()), name: name ?? (value.name || option) };
  }
  const path = nodePath(value);
  if (path !== null) {
    const { readNodeFile } = await nodeOnly('./node-io.js');
    return { bytes: await readNodeFile(path), name: name ?? String(path) };
  }
  throw new AmnError('invalid_argument', `forget(): ${option} must be bytes (Uint8Array, ArrayBuffer), a Blob or File, or in Node a path`);
}

const ARRAY_TYPES = {
  BF16: Uint16Array, F16: Uint16Array, F32: Float32Array, F64: Float64Array,
  I32: Int32Array, I64: BigInt64Array,
};

// The output plan of a model, for npm/bin/amn.js (remember's default name depends on the
// model, so the plan is the model's session's).
export const OUTPUT_PLAN = Symbol('amn.outputPlan');
// The CLI's hash: the core's JSON and text (ggufPath: gguf-hash's lines naming that path).
export const HASH_RAW = Symbol('amn.hashRaw');
// diff(a, b) (lib/diff.js): the comparison run on two open models, the core's JSON, text
// and exit status.
export const DIFF_RAW = Symbol('amn.diffRaw');
// The CLI's stats: the core's JSON text as written (numbers spelled as the native amn does).
export const STATS_RAW = Symbol('amn.statsRaw');

function check(status) {
  if (status && status.ok === false) throw errorFromStatus(status);
}

let serials = 0;

export class Model {
  #M; #session; #files; #hooks; #lateConfigs; #queue = Promise.resolve(); #closed = false; #info = null; #infoJson = null;
  #serial = serials++;  // diff() takes two models' turns in this order, so two diffs cannot wait on each other

  // lateConfigs: () => the config files beside the model (FileRefs read synchronously),
  // when open() did not look for them (open.js): read on first use.
  constructor(M, session, files, hooks, lateConfigs = null) {
    this.#M = M;
    this.#session = session;
    this.#files = files;
    this.#hooks = hooks;
    this.#lateConfigs = lateConfigs;
  }

  /** The model-info document as the core wrote it: the bytes `amn inspect --json` prints.
   *  Written on first use, not by open(): for a large header (tens of thousands of tensors,
   *  a GGUF vocabulary) writing and decoding it costs about as much as parsing the header. */
  get infoJson() {
    if (this.#infoJson === null) {
      this.#assertOpen();
      this.#infoJson = this.#session.info();
    }
    return this.#infoJson;
  }

  /** The same document, parsed (docs/json-schema.md); parsed on first use, since a GGUF
   *  vocabulary can make it megabytes long. */
  get info() {
    this.#info ??= JSON.parse(this.infoJson);
    return this.#info;
  }

  /** What another model's forget({ like: this }) writes: 'gguf' when this model is a GGUF
   *  (each tensor takes its ggml type here), else 'safetensors' — the core's rule; pass
   *  it as forget()'s `to`. */
  get likeFormat() {
    this.#assertOpen();
    return this.#session.likeOutputFormat();
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
    return this.#exclusive(async () => {
      // The core checks `to` (bf16, f16 or f32) and says what is wrong.
      check(this.#session.planTensor(String(name), to === undefined || to === null ? '' : String(to)));
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

  /** One tensor's value statistics, computed by the core streaming its pieces twice (the
   *  tensor is never held whole): {name, dtype, shape, count, min, max, mean, std, nan,
   *  pos_inf, neg_inf, zeros, histogram: {min, max, counts}} (docs/json-schema.md "stats").
   *  `text: true` adds `text`, the lines `amn stats` prints for it. `detail: true` asks for
   *  what the page's detail view shows besides: a 64-bin histogram, `values_dtype`, `head`
   *  (the first values), `int_min` / `int_max` (64-bit integers, exact) and `heatmap` (a
   *  downsampled grid of a 2-D weight), from the same two passes. `onProgress({done, total})`
   *  is called after each step (a piece of a pass). */
  async stats(name, { signal, text = false, detail = false, onProgress } = {}) {
    const raw = await this[STATS_RAW](name, { signal, detail, onProgress });
    const out = JSON.parse(raw.json);
    if (text) out.text = raw.text;
    return out;
  }

  // Runs a planned stats or hash run's steps in order, each fed through the model's files;
  // the session's piece data is released after each step and on the way out.
  async #runSteps(count, run, what, signal, onProgress) {
    const s = this.#session;
    try {
      for (let i = 0; i < count; i++) {
        this.#assertOpen();
        await drive(this.#M, s, this.#files, () => run(i), { signal, what: `${what} step ${i}` });
        s.releaseData();
        onProgress?.({ done: i + 1, total: count });
      }
    } finally {
      s.releaseData();
    }
  }

  async [STATS_RAW](name, { signal, detail = false, onProgress } = {}) {
    return this.#exclusive(async () => {
      const s = this.#session;
      check(s.planStats(String(name), Boolean(detail)));
      await this.#runSteps(s.statsStepCount(), (i) => s.runStatsStep(i), 'stats', signal, onProgress);
      return { json: s.statsJson(), text: s.statsText() };
    });
  }

  /** SHA-256, XXH64 and SHA-1 of every stored tensor's bytes and of the whole model
   *  (every tensor's bytes in order), with llama.cpp gguf-hash's model UUID:
   *  {dequantized, tensors: [{name, bytes, sha256, xxh64, sha1}], model: {tensors, bytes,
   *  sha256, xxh64, sha1, uuid}} (docs/json-schema.md "The hash document"). Read in chunks
   *  of 16 MiB. dequantized: over the remembered values (each tensor as F32, as
   *  tensor(name, {to: 'f32'}) gives it) instead of the stored bytes. */
  async hash({ signal, dequantized = false } = {}) {
    return JSON.parse((await this[HASH_RAW]({ signal, dequantized })).json);
  }

  async [HASH_RAW]({ signal, ggufPath = '', dequantized = false } = {}) {
    return this.#exclusive(async () => {
      const s = this.#session;
      check(s.planHash(Boolean(dequantized)));
      await this.#runSteps(s.hashStepCount(), (i) => s.runHashStep(i), 'hash', signal);
      return { json: s.hashJson(), text: s.hashText(ggufPath) };
    });
  }

  // Compares this model (A) with `other` (B): the core runs every step on A's session,
  // each reading one piece of one side; the side's own session is served its bytes.
  async [DIFF_RAW](other, { signal, onProgress, exactNames = false } = {}) {
    if (!(other instanceof Model)) throw new AmnError('invalid_argument', 'diff(): both sides must be open Models');
    other.#assertOpen();
    const [first, second] = this.#serial <= other.#serial ? [this, other] : [other, this];
    const both = (fn) => first.#exclusive(() => (first === second ? fn() : second.#exclusive(fn)));
    return both(async () => {
      const s = this.#session;
      const b = other.#session;
      check(s.planDiff(b, Boolean(exactNames)));
      const steps = s.diffStepCount();
      const sides = [[s, this.#files], [b, other.#files]];
      try {
        for (let i = 0; i < steps; i++) {
          this.#assertOpen();
          other.#assertOpen();
          const [session, files] = sides[s.diffStepSide(i)];
          await drive(this.#M, session, files, () => s.runDiffStep(i, b), { signal, what: `diff step ${i}` });
          session.releaseData();
          onProgress?.({ done: i + 1, total: steps });
        }
      } finally {
        s.releaseData();
        b.releaseData();
      }
      return { json: s.diffJson(), text: s.diffText(), exitStatus: s.diffExitStatus() };
    });
  }

  /** The tensors `amn stats` describes when none is named: every tensor, a quantized
   *  weight as its one logical tensor. */
  get statsNames() {
    this.#assertOpen();
    return JSON.parse(this.#session.statsNames());
  }

  /** Alias kept from the design sketch: tensor(). Without `to` nothing loses precision: a
   *  stored tensor keeps its dtype, a quantized weight takes its natural one. */
  async dequantize(name, options = {}) {
    return this.tensor(name, options);
  }

  /** Writes the whole model (safetensors or GGUF, optionally cast) to `sink`, streaming.
   *  A sharded safetensors output (the input's shards by default, `maxShardSize`, or
   *  `shards: 'input'`) goes to `openShard(name)` for each file, or in Node to a folder
   *  path, written atomically. */
  async convert({ to = 'safetensors', dtype, castAll = false, ggufKv, ggufMetadata, sink, overwrite = false,
    sync = true, threads, shards, maxShardSize, splitMaxSize, splitMaxTensors, keepSplit = false, openShard, onProgress, signal } = {}) {
    if (openShard !== undefined && typeof openShard !== 'function') {
      throw new AmnError('invalid_argument', 'convert(): openShard must be a function (name) => sink');
    }
    if (openShard && sink !== undefined && sink !== null) {
      throw new AmnError('invalid_argument', 'convert(): pass either sink or openShard, not both');
    }
    // The request as the core reads it (session/request.h): the core validates every
    // option and decides the layout (one file or a folder of shards) as the CLI does.
    // GGUF KVs: `ggufKv` as CLI-style "key[:TYPE]=value" strings, `ggufMetadata` as an
    // object of {key: value | {type, value}} (the info JSON's details.kv shape), or JSON text.
    const path = nodePath(sink);
    const request = {
      to, dtype: dtype ?? null, castAll, ggufKv: ggufKv ?? null, ggufMetadata: ggufMetadata ?? null,
      shards: shards ?? null, maxShardSize: maxShardSize ?? null, splitMaxSize: splitMaxSize ?? null,
      splitMaxTensors: splitMaxTensors ?? null, keepSplit, output: path === null ? null : String(path), threads: threads ?? null,
    };
    const destination = openShard ? 'per_file' : path !== null ? 'path' : 'single';
    const layout = this.#outputPlan(request, destination);
    if (layout.folder) {
      return this.#exclusive(() => this.#convertShards(request, destination, { sink, overwrite, sync, openShard, onProgress, signal }));
    }
    return this.#exclusive(async () => {
      throwIfAborted(signal);
      // Open the sink first: an existing output is refused before any work. `sync: false`
      // (Node path sinks) skips the fsyncs, not the temporary name and the rename.
      const out = await this.#hooks.openSink(sink, { overwrite, sync: sync !== false, signal });
      let plan;
      try {
        check(this.#session.planConvert(JSON.stringify(request), destination));
        plan = JSON.parse(this.#session.planInfo());
      } catch (err) {
        await out.abort(err).catch(() => {});
        throw err;
      }
      const output = await this.#writePlan(out, plan, this.#progress(plan.output_bytes, onProgress), signal);
      // A path or stream sink reports { bytes, ... }: say how many tensors too (the CLIs'
      // "wrote" line). An in-memory result (no sink) is the bytes or Blob itself.
      const described = output !== null && typeof output === 'object' && Object.getPrototypeOf(output) === Object.prototype;
      return described ? { ...output, tensors: plan.tensors.length } : output;
    });
  }

  /** Quantizes the model as the scheme's producer would (`scheme`: 'nf4', 'fp4', 'int8',
   *  'mlx', ...; `blocksize`, `doubleQuant` for nf4 / fp4; `bits`, `groupSize`, `mode` ('affine', 'mxfp4', 'nvfp4', 'mxfp8') for mlx; `skip` / `only` name globs, `strict`) and streams it to
   *  `sink`: one safetensors file, or with `openShard(name)` (or in Node a folder path)
   *  a folder holding model.safetensors and config.json with the producer's
   *  quantization_config. `to: 'gguf'` with a llama-quantize file type as `scheme`
   *  ('Q4_K_M', 'q8_0': its per-tensor mix; `outputTensorType`, `tokenEmbeddingType`,
   *  `leaveOutputTensor`, `tensorType` ('NAME=TYPE' or a list, regular expressions),
   *  `tensorTypeFile` (such entries separated by spaces or newlines: a Blob, bytes, or in
   *  Node a path) as llama-quantize's options) or a ggml type with `pure` ('Q4_K';
   *  `ggufKv`, `ggufMetadata` as convert's) writes one GGUF file. Resolves to the sink's result with `tensors`, `lethe` (what
   *  was lost, per tensor and for the model: docs/json-schema.md), `letheJson` and
   *  `letheText` (the CLI's table). `like`: an open quantized Model whose scheme, settings
   *  and weights to follow; with `reuseScales` its scales too. */
  async forget({ scheme, to, pure = false, outputTensorType, tokenEmbeddingType, leaveOutputTensor = false, tensorType, tensorTypeFile, imatrix, imatrixName,
    includeWeights, excludeWeights, allowRequantize = false, ggufKv,
    ggufMetadata, blocksize, doubleQuant = false, torchThreads, bits, groupSize, mode, skip, only, shards, maxShardSize, splitMaxSize,
    splitMaxTensors, keepSplit = false, pruneLayers, strict = false, like, reuseScales = false, sink, overwrite = false, sync = true, threads, openShard, onProgress,
    signal } = {}) {
    if (like !== undefined && like !== null && !(like instanceof Model)) {
      throw new AmnError('invalid_argument', 'forget(): like must be an open Model (await open(reference))');
    }
    if (openShard !== undefined && typeof openShard !== 'function') {
      throw new AmnError('invalid_argument', 'forget(): openShard must be a function (name) => sink');
    }
    if (openShard && sink !== undefined && sink !== null) {
      throw new AmnError('invalid_argument', 'forget(): pass either sink or openShard, not both');
    }
    const path = nodePath(sink);
    const matrix = imatrix === undefined || imatrix === null ? null : await fileInput(imatrix, 'imatrix', imatrixName);
    const types = tensorTypeFile === undefined || tensorTypeFile === null ? null : await fileInput(tensorTypeFile, 'tensorTypeFile');
    const request = {
      verb: 'forget', scheme: scheme ?? null, to: to ?? null, pure, ggufKv: ggufKv ?? null,
      imatrix: matrix ? matrix.name : null, includeWeights: includeWeights ?? null, excludeWeights: excludeWeights ?? null,
      allowRequantize,
      outputTensorType: outputTensorType ?? null, tokenEmbeddingType: tokenEmbeddingType ?? null, leaveOutputTensor,
      tensorType: tensorType ?? null, tensorTypeFile: types ? types.name : null,
      ggufMetadata: ggufMetadata ?? null, blocksize: blocksize ?? null, doubleQuant, torchThreads: torchThreads ?? null, bits: bits ?? null,
      groupSize: groupSize ?? null, mode: mode ?? null, skip: skip ?? null, shards: shards ?? null, maxShardSize: maxShardSize ?? null,
      splitMaxSize: splitMaxSize ?? null, splitMaxTensors: splitMaxTensors ?? null, keepSplit, pruneLayers: pruneLayers ?? null,
      only: only ?? null, strict, output: path === null ? null : String(path),
      like: like ? (like.info.index ?? like.info.files[0]?.name ?? 'reference') : null, reuseScales, threads: threads ?? null,
    };
    const destination = openShard ? 'per_file' : path !== null ? 'path' : 'single';
    const layout = this.#outputPlan(request, destination);
    return this.#exclusive(async () => {
      throwIfAborted(signal);
      const s = this.#session;
      if (matrix) {
        const n = matrix.bytes.byteLength;
        const p = this.#M._malloc(Math.max(n, 1)) >>> 0;  // the core frees it
        if (p === 0) throw new AmnError('limit', `out of WASM memory allocating ${n} bytes`);
        this.#M.HEAPU8.set(matrix.bytes, p);
        check(s.setImatrix(p, n));
      }
      if (types) s.setTensorTypeFile(new TextDecoder().decode(types.bytes));
      if (like) {
        // The reference's scales are read through its own files (its session answers need_bytes).
        like.#assertOpen();
        const ref = like.#session;
        try {
          await drive(this.#M, ref, like.#files, () => s.planForgetLike(JSON.stringify(request), ref, destination), { signal, what: 'the reference' });
        } finally {
          ref.releaseData();
        }
      } else {
        check(s.planForget(JSON.stringify(request), destination));
      }
      // Encoders whose sizes wait for the values (a double-quantized absmax's mean) see
      // their tensor first; then the header is final.
      try {
        for (let i = 0; i < s.prepareCount(); i++) {
          await drive(this.#M, s, this.#files, () => s.runPrepare(i), { signal, what: `prepare ${i}` });
          s.releaseData();
        }
      } finally {
        s.releaseData();
      }
      check(s.finishPrepared());
      let result;
      if (layout.folder) {
        // The model's files as the core cut them (the input's shards, maxShardSize, GGUF
        // splits), then config.json with the producer's quantization_config.
        const folder = await this.#openFolder({ sink, overwrite, sync, openShard, signal });
        const config = s.forgetConfig();
        result = await this.#writeFolder(folder, { onProgress, signal, extra: config ? [{ name: 'config.json', text: config }] : [] });
      } else {
        const plan = JSON.parse(s.planInfo());
        const out = await this.#hooks.openSink(sink, { overwrite, sync: sync !== false, signal });
        const output = await this.#writePlan(out, plan, this.#progress(plan.output_bytes, onProgress), signal);
        const described = output !== null && typeof output === 'object' && Object.getPrototypeOf(output) === Object.prototype;
        result = described ? { ...output, tensors: plan.tensors.length } : { output, tensors: plan.tensors.length };
      }
      const letheJson = s.forgetReport();
      return { ...result, lethe: JSON.parse(letheJson), letheJson, letheText: s.forgetText() };
    });
  }

  /** The default output name, as both CLIs name it: outputName({ to: 'gguf', dtype: 'f16' })
   *  is "<stem>-f16.gguf" for the model's entry file (a folder name for a sharded output);
   *  `verb: 'remember'` gives the name `amn remember` writes (without `dtype`: lossless,
   *  "<stem>.safetensors" from a file that is not safetensors); `scheme` names what
   *  forget({ scheme }) writes into one sink ("<stem>-nf4.safetensors"). */
  outputName({ to = 'safetensors', dtype, castAll = false, verb = 'convert', sharded = false, scheme } = {}) {
    const entry = this.info.index ?? this.info.files[0]?.name ?? 'model';
    if (scheme !== undefined) {
      return this[OUTPUT_PLAN]({ request: { scheme, to }, surface: 'api', destination: 'single', place: { entry } }).name;
    }
    return this[OUTPUT_PLAN]({
      request: { verb, to, dtype: dtype ?? null, castAll }, surface: 'api',
      shardedInput: Boolean(sharded && this.info.sharded), destination: 'path', place: { entry },
    }).name;
  }

  /** What convert() / remember / forget({ scheme }) to a path writes by default, as both
   *  CLIs decide it: `{ folder: true }` for a folder (a sharded safetensors input, `shards:
   *  'input'`, `maxShardSize`, a GGUF split; forget's folder with config.json), else one
   *  file; `sharded`: the folder's model may be several files; `name` its default name. */
  outputLayout({ to = 'safetensors', dtype, castAll = false, verb, scheme, shards, maxShardSize, splitMaxSize,
    splitMaxTensors, keepSplit = false } = {}) {
    const entry = this.info.index ?? this.info.files[0]?.name ?? 'model';
    const request = {
      verb: verb ?? null, scheme: scheme ?? null, dtype: dtype ?? null, to, castAll, shards: shards ?? null,
      maxShardSize: maxShardSize ?? null, splitMaxSize: splitMaxSize ?? null, splitMaxTensors: splitMaxTensors ?? null, keepSplit,
    };
    const plan = this[OUTPUT_PLAN]({
      request, surface: 'api', shardedInput: Boolean(this.info.sharded), destination: 'path', place: { entry },
    });
    return { folder: plan.folder, sharded: plan.sharded, name: plan.name };
  }

  /** The core's output plan (session/output.h output_plan_json) for this model: the
   *  Node CLI's default target. Not part of the documented API. */
  [OUTPUT_PLAN](spec) {
    this.#assertOpen();
    const plan = JSON.parse(this.#session.outputPlan(JSON.stringify(spec)));
    if (plan.ok === false) throw errorFromStatus(plan);
    return plan;
  }

  // One file, or a folder of shards? The core's rule (session/output.h), from what the
  // destination is: openShard (per_file), a Node path, or one sink.
  #outputPlan(request, destination) {
    return this[OUTPUT_PLAN]({ request, surface: 'api', shardedInput: Boolean(this.info.sharded), destination });
  }

  // Every shard, then the index, each through its own sink: openShard's, or a file in a
  // Node folder that is renamed into place only when all are written.
  async #convertShards(request, destination, { sink, overwrite, sync, openShard, onProgress, signal }) {
    throwIfAborted(signal);
    check(this.#session.planConvert(JSON.stringify(request), destination));
    const folder = await this.#openFolder({ sink, overwrite, sync, openShard, signal });
    return this.#writeFolder(folder, { onProgress, signal });
  }

  // The files the core planned (its shards, or the one file it names), the index, then
  // `extra` files ({ name, text }), into `folder`, committed when all are written.
  async #writeFolder(folder, { onProgress, signal, extra = [] }) {
    const info = JSON.parse(this.#session.shardsInfo());
    const { files } = info;
    const total = files.reduce((n, f) => n + f.output_bytes, 0);
    const progress = this.#progress(total, onProgress);
    const written = [];
    const writeText = async (name, text) => {
      const bytes = new TextEncoder().encode(text);
      const out = await folder.open(name);
      try {
        await out.write(bytes);
        throwIfAborted(signal);
        written.push({ name, bytes: bytes.byteLength, output: await out.close() });
      } catch (err) {
        await out.abort(err).catch(() => {});
        throw err;
      }
    };
    try {
      for (let k = 0; k < files.length; k++) {
        check(this.#session.selectShard(k));
        const plan = JSON.parse(this.#session.planInfo());
        const out = await folder.open(files[k].name);
        const output = await this.#writePlan(out, plan, progress, signal);
        written.push({ name: files[k].name, bytes: plan.output_bytes, output });
      }
      if (info.index) await writeText(info.index_name, info.index);
      for (const { name, text } of extra) await writeText(name, text);
      throwIfAborted(signal);
      const path = await folder.commit();
      const tensors = files.reduce((n, f) => n + f.tensors, 0);
      const result = { bytes: total, shards: files.length, tensors, files: written };
      if (info.index) result.index = info.index_name;
      if (path !== undefined) result.path = path;
      return result;
    } catch (err) {
      await folder.abort(err).catch(() => {});
      throw err;
    }
  }

  // A folder output: a sink per file from openShard, or a Node folder renamed into place
  // when every file is in it.
  async #openFolder({ sink, overwrite, sync, openShard, signal }) {
    if (!openShard) return openFolderSink(sink, { overwrite, sync: sync !== false });
    const open = async (name) => this.#hooks.openSink(await openShard(name), { overwrite, sync: sync !== false, signal });
    return { open, commit: async () => {}, abort: async () => {} };
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

  /** `await using model = await open(…)` closes it at the end of the block. */
  async [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    await this.close();
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

  // Every use of the model starts here, so the config files open() left for later are
  // read before anything that may show or use them (info, text, forget's config.json).
  #assertOpen() {
    if (this.#closed) throw new AmnError('invalid_argument', 'the model is closed');
    if (this.#lateConfigs) this.#readLateConfigs();
  }

  // Synchronous: `info` and `text()` are. The core adds the files and their contents as
  // open() would have (session/open.h read_late_config).
  #readLateConfigs() {
    const refs = this.#lateConfigs().filter((ref) => !this.#files.has(ref.name));
    this.#lateConfigs = null;
    if (refs.length === 0) return;
    for (const ref of refs) this.#files.add(ref);
    const s = this.#session;
    try {
      for (let round = 0; ; round++) {
        const st = s.readLateConfig();
        if (st.ok) return;
        if (st.code !== 'need_bytes' || round >= MAX_ROUNDS) throw errorFromStatus(st);
        if (supplyBytes(this.#M, s, this.#files, st.needBytes)) throw new AmnError('internal', 'a config file was not read synchronously');
      }
    } finally {
      s.releaseData();
    }
  }

  #exclusive(fn) {
    this.#assertOpen();
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }
}
