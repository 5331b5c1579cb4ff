// A parsed model over one core Session. Operations on a model run one at a time
// (the Session holds one plan), queued in call order.
import { AmnError, errorFromStatus, throwIfAborted } from './errors.js';
import { drive } from './session.js';

const TARGETS = ['bf16', 'f16', 'f32'];
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

  /** Writes the whole model as safetensors (optionally cast) to `sink`, streaming. */
  async convert({ to = 'safetensors', dtype, castAll = false, ggufKv, ggufMetadata, sink, overwrite = false, onProgress, signal } = {}) {
    if (to !== 'safetensors' && to !== 'gguf') throw new AmnError('unsupported', `convert(): cannot write "${to}" (safetensors or gguf)`);
    const target = checkTarget(dtype, 'convert()') || null;
    return this.#exclusive(async () => {
      throwIfAborted(signal);
      // Open the sink first: an existing output is refused before any work.
      const out = await this.#hooks.openSink(sink, { overwrite, signal });
      // The sink writes piece i while the core reads and runs piece i+1.
      let pending = Promise.resolve();
      try {
        // GGUF KVs: `ggufKv` as CLI-style "key[:TYPE]=value" strings, `ggufMetadata` as an
        // object of {key: value | {type, value}} (the info JSON's details.kv shape).
        check(this.#session.planConvert(JSON.stringify({
          to, dtype: target, cast_all: Boolean(castAll), gguf_kv: ggufKv ?? null,
          gguf_metadata: ggufMetadata ?? null,  // an object, or JSON text the core parses
        })));
        const plan = JSON.parse(this.#session.planInfo());
        const header = this.#session.outputHeader().slice();
        const total = plan.output_bytes;  // header, tensors and any alignment padding
        let done = 0;
        const progress = (n) => { done += n; onProgress?.({ done, total }); };
        await out.write(header);
        progress(header.byteLength);
        await this.#eachPiece(signal, async (bytes) => {
          await pending;
          pending = out.write(bytes).then(() => progress(bytes.byteLength));
          pending.catch(() => {});  // handled at the next await; not an unhandled rejection
        });
        await pending;
        if (done !== total) throw new AmnError('internal', `wrote ${done} bytes, planned ${total}`);
        throwIfAborted(signal);
        return await out.close();
      } catch (err) {
        await pending.catch(() => {});  // no write may still be running when the sink is aborted
        await out.abort(err).catch(() => {});
        throw err;
      }
    });
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
