// A safetensors model made of fixtures/ggml_quant/input.f32 (16 x 256 F32) as one layer
// weight, plus a 1-D norm: forget --to gguf must write ggml's fixture blocks for the
// weight (fixtures/ggml_quant/<TYPE>.q) and keep the norm as F32.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES } from './helpers.js';

export function ggufForgetInput() {
  const x = readFileSync(join(FIXTURES, 'ggml_quant/input.f32'));
  const norm = x.subarray(0, 1024);
  let header = JSON.stringify({
    'blk.0.attn_q.weight': { dtype: 'F32', shape: [16, 256], data_offsets: [0, x.length] },
    'blk.0.attn_norm.weight': { dtype: 'F32', shape: [256], data_offsets: [x.length, x.length + norm.length] },
  });
  header += ' '.repeat((8 - (header.length % 8)) % 8);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([size, Buffer.from(header), x, norm]);
}

export const ggmlBlocks = (type) => readFileSync(join(FIXTURES, `ggml_quant/${type}.q`));

// A GGUF's tensors as { name: [type, sha256 of its bytes] }, read by the package (order
// free: llama-quantize writes its loader's order, amn the input's).
export async function ggufTensors(amn, bytes) {
  const { createHash } = await import('node:crypto');
  const m = await amn.open(new Uint8Array(bytes));
  try {
    const out = {};
    for (const t of m.info.tensors) {
      const data = bytes.subarray(t.offset, t.offset + t.nbytes);
      out[t.name] = [t.dtype, createHash('sha256').update(data).digest('hex')];
    }
    return out;
  } finally {
    await m.close();
  }
}
