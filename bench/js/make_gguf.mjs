// Writes a GGUF v3 file shaped like a llama-style model's: the usual llama.* keys, a
// 32,000-token SentencePiece vocabulary (tokens, scores, token types: the arrays that make
// real GGUF headers large) and `layers` × 9 Q4_K / F32 tensors with 7B-like shapes. The
// data section is a hole (ftruncate): huge on paper, a few MB on disk. Deterministic: the
// same arguments give the same bytes. Used by bench/js/open.mjs.
import { openSync, writeSync, ftruncateSync, closeSync } from 'node:fs';

const ALIGNMENT = 32;  // GGUF's default general.alignment
// ggml_type ids and block sizes (ggml.h / ggml.c type traits): F32 = 0 (4 bytes per
// element), Q4_K = 12 (144 bytes per 256 elements).
const F32 = 0;
const Q4_K = 12;
const tensorBytes = (type, elements) => (type === F32 ? elements * 4 : (elements / 256) * 144);

// GGUF value types (gguf.h): the ones written here.
const T = { UINT32: 4, INT32: 5, FLOAT32: 6, STRING: 8, ARRAY: 9 };

class Writer {
  constructor() { this.chunks = []; this.length = 0; }
  push(buf) { this.chunks.push(buf); this.length += buf.length; }
  u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
  i32(v) { const b = Buffer.alloc(4); b.writeInt32LE(v); this.push(b); }
  u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.push(b); }
  f32(v) { const b = Buffer.alloc(4); b.writeFloatLE(v); this.push(b); }
  str(s) { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.push(b); }
  kv(key, type, write) { this.str(key); this.u32(type); write(); }
  array(key, type, values, write) {
    this.kv(key, T.ARRAY, () => { this.u32(type); this.u64(values.length); values.forEach((v, i) => write(v, i)); });
  }
}

// A fixed pseudo-random sequence (xorshift32), so every run writes the same vocabulary.
function xorshift(seed) {
  let x = seed >>> 0;
  return () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x; };
}

function vocabulary(n) {
  const next = xorshift(0x9e3779b9);
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const tokens = ['<unk>', '<s>', '</s>'];
  while (tokens.length < n) {
    const len = 1 + (next() % 10);
    let t = next() % 3 === 0 ? '▁' : '';
    for (let i = 0; i < len; i++) t += letters[next() % 26];
    tokens.push(`${t}${tokens.length}`);  // the index keeps every token distinct
  }
  return tokens;
}

export function llamaGguf(path, { layers = 112, vocab = 32000 } = {}) {
  const dim = 4096;
  const ff = 11008;
  const tensors = [['token_embd.weight', [dim, vocab], Q4_K], ['output_norm.weight', [dim], F32],
    ['output.weight', [dim, vocab], Q4_K]];
  const parts = [['attn_q.weight', [dim, dim], Q4_K], ['attn_k.weight', [dim, dim], Q4_K],
    ['attn_v.weight', [dim, dim], Q4_K], ['attn_output.weight', [dim, dim], Q4_K],
    ['ffn_gate.weight', [dim, ff], Q4_K], ['ffn_up.weight', [dim, ff], Q4_K],
    ['ffn_down.weight', [ff, dim], Q4_K], ['attn_norm.weight', [dim], F32], ['ffn_norm.weight', [dim], F32]];
  for (let l = 0; l < layers; l++) for (const [name, shape, type] of parts) tensors.push([`blk.${l}.${name}`, shape, type]);

  const tokens = vocabulary(vocab);
  const w = new Writer();
  w.push(Buffer.from('GGUF'));
  w.u32(3);
  w.u64(tensors.length);
  const kvs = [
    () => w.kv('general.architecture', T.STRING, () => w.str('llama')),
    () => w.kv('general.name', T.STRING, () => w.str('bench-llama')),
    () => w.kv('llama.context_length', T.UINT32, () => w.u32(4096)),
    () => w.kv('llama.embedding_length', T.UINT32, () => w.u32(dim)),
    () => w.kv('llama.block_count', T.UINT32, () => w.u32(layers)),
    () => w.kv('llama.feed_forward_length', T.UINT32, () => w.u32(ff)),
    () => w.kv('llama.rope.dimension_count', T.UINT32, () => w.u32(128)),
    () => w.kv('llama.attention.head_count', T.UINT32, () => w.u32(32)),
    () => w.kv('llama.attention.head_count_kv', T.UINT32, () => w.u32(32)),
    () => w.kv('llama.attention.layer_norm_rms_epsilon', T.FLOAT32, () => w.f32(1e-5)),
    () => w.kv('general.file_type', T.UINT32, () => w.u32(15)),
    () => w.kv('tokenizer.ggml.model', T.STRING, () => w.str('llama')),
    () => w.array('tokenizer.ggml.tokens', T.STRING, tokens, (t) => w.str(t)),
    () => w.array('tokenizer.ggml.scores', T.FLOAT32, tokens, (_, i) => w.f32(-i)),
    () => w.array('tokenizer.ggml.token_type', T.INT32, tokens.map((_, i) => (i < 3 ? 3 : 1)), (v) => w.i32(v)),
    () => w.kv('tokenizer.ggml.bos_token_id', T.UINT32, () => w.u32(1)),
    () => w.kv('tokenizer.ggml.eos_token_id', T.UINT32, () => w.u32(2)),
    () => w.kv('general.quantization_version', T.UINT32, () => w.u32(2)),
  ];
  w.u64(kvs.length);
  for (const kv of kvs) kv();
  let offset = 0;
  for (const [name, shape, type] of tensors) {
    w.str(name);
    w.u32(shape.length);
    for (const d of shape) w.u64(d);
    w.u32(type);
    w.u64(offset);
    offset += tensorBytes(type, shape.reduce((a, b) => a * b, 1));
    offset = Math.ceil(offset / ALIGNMENT) * ALIGNMENT;
  }
  w.push(Buffer.alloc((ALIGNMENT - (w.length % ALIGNMENT)) % ALIGNMENT));
  const header = Buffer.concat(w.chunks);
  const fd = openSync(path, 'w');
  writeSync(fd, header);
  ftruncateSync(fd, header.length + offset);
  closeSync(fd);
  return { tensors: tensors.length, kvs: kvs.length, headerBytes: header.length, fileBytes: header.length + offset };
}
