// Builds safetensors files for tests: the header JSON, padded with spaces to 8 bytes,
// after its u64 little-endian length, then the data section.
import { open } from 'node:fs/promises';

const SIZES = { BOOL: 1, U8: 1, I8: 1, I16: 2, U16: 2, F16: 2, BF16: 2, I32: 4, U32: 4, F32: 4, I64: 8, U64: 8, F64: 8 };

// tensors: [{ name, dtype, shape, data? (Uint8Array) }]; data defaults to zeros.
// Returns { header (Uint8Array, length prefix included), dataBytes, offsets }.
export function safetensorsHeader(tensors, metadata) {
  const json = {};
  if (metadata) json.__metadata__ = metadata;
  let at = 0;
  const offsets = [];
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1) * SIZES[t.dtype];
    json[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + n] };
    offsets.push([at, at + n]);
    at += n;
  }
  let text = JSON.stringify(json);
  text += ' '.repeat((8 - ((8 + text.length) % 8)) % 8);
  const body = new TextEncoder().encode(text);
  const header = new Uint8Array(8 + body.length);
  new DataView(header.buffer).setBigUint64(0, BigInt(body.length), true);
  header.set(body, 8);
  return { header, dataBytes: at, offsets };
}

export function makeSafetensors(tensors, metadata) {
  const { header, dataBytes, offsets } = safetensorsHeader(tensors, metadata);
  const out = new Uint8Array(header.length + dataBytes);
  out.set(header);
  tensors.forEach((t, i) => { if (t.data) out.set(t.data, header.length + offsets[i][0]); });
  return out;
}

// Header written normally, data left as a hole: a huge file that costs no disk.
export async function writeSparseSafetensors(path, tensors, metadata) {
  const { header, dataBytes } = safetensorsHeader(tensors, metadata);
  const fh = await open(path, 'w');
  try {
    await fh.write(header, 0, header.length, 0);
    await fh.truncate(header.length + dataBytes);
  } finally {
    await fh.close();
  }
  return { headerBytes: header.length, size: header.length + dataBytes };
}

export const f32Bytes = (values) => new Uint8Array(new Float32Array(values).buffer);

// A sharded model in `dir`: model-0000i-of-0000n.safetensors, the index, config.json.
// shards: [[tensor, ...], ...]. Returns the file names.
export async function writeShardedModel(dir, shards, { config = { model_type: 'test', hidden_size: 4 }, metadata } = {}) {
  const { writeFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const n = String(shards.length).padStart(5, '0');
  const weightMap = {};
  const names = [];
  let total = 0;
  for (let i = 0; i < shards.length; i++) {
    const name = `model-${String(i + 1).padStart(5, '0')}-of-${n}.safetensors`;
    const bytes = makeSafetensors(shards[i], metadata);
    await writeFile(join(dir, name), bytes);
    for (const t of shards[i]) weightMap[t.name] = name;
    total += bytes.length;
    names.push(name);
  }
  const index = { metadata: { total_size: total }, weight_map: weightMap };
  await writeFile(join(dir, 'model.safetensors.index.json'), JSON.stringify(index, null, 2));
  if (config) await writeFile(join(dir, 'config.json'), JSON.stringify(config));
  return { shards: names, index: 'model.safetensors.index.json' };
}
