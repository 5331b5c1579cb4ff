// Writes a safetensors file whose header lists `tensors` entries shaped like a real
// decoder (7B-like names and shapes, BF16) and whose data section is a hole
// (ftruncate): the file is huge on paper and tiny on disk. Used by the header benchmarks
// and by the remote-inspect tests' big-file cases.
import { openSync, writeSync, ftruncateSync, closeSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export function bigHeaderFile(path, { layers = 700 } = {}) {
  const parts = [['self_attn.q_proj.weight', [4096, 4096]], ['self_attn.k_proj.weight', [1024, 4096]],
    ['self_attn.v_proj.weight', [1024, 4096]], ['self_attn.o_proj.weight', [4096, 4096]],
    ['mlp.gate_proj.weight', [14336, 4096]], ['mlp.up_proj.weight', [14336, 4096]],
    ['mlp.down_proj.weight', [4096, 14336]], ['input_layernorm.weight', [4096]],
    ['post_attention_layernorm.weight', [4096]]];
  const header = { __metadata__: { format: 'pt' } };
  let offset = 0;
  let count = 0;
  for (let l = 0; l < layers; l++) {
    for (const [name, shape] of parts) {
      const nbytes = shape.reduce((a, b) => a * b, 1) * 2;
      header[`model.layers.${l}.${name}`] = { dtype: 'BF16', shape, data_offsets: [offset, offset + nbytes] };
      offset += nbytes;
      count++;
    }
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const fd = openSync(path, 'w');
  writeSync(fd, prefix);
  writeSync(fd, json);
  ftruncateSync(fd, 8 + Buffer.byteLength(json) + offset);
  closeSync(fd);
  return { tensors: count, headerBytes: 8 + Buffer.byteLength(json), fileBytes: 8 + Buffer.byteLength(json) + offset };
}

// `node bench/make_big_header.mjs OUT [layers]` writes the file and prints its figures.
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const [out, layers] = process.argv.slice(2);
  if (!out) { console.error('usage: make_big_header.mjs OUT [layers]'); process.exit(2); }
  console.log(JSON.stringify(bigHeaderFile(out, { layers: Number(layers ?? 700) })));
}
