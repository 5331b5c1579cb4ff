// A small model with one tensor of each interesting dtype and values whose casts are
// exact, so tests can state the expected results directly.
import { makeSafetensors } from './safetensors.js';

const u8 = (typed) => new Uint8Array(typed.buffer.slice(0));

// BF16 bits of small multiples of 1/4: exact in every float format used here.
const bf16Bits = (x) => new Uint32Array(new Float32Array([x]).buffer)[0] >>> 16;
export const W_VALUES = Array.from({ length: 32 }, (_, i) => i * 0.25 - 3);

export function sampleTensors() {
  return [
    { name: 'w', dtype: 'F32', shape: [4, 8], data: u8(new Float32Array(W_VALUES)) },
    { name: 'b', dtype: 'BF16', shape: [8], data: u8(new Uint16Array([1, -1, 2, 0.5, 0, -0, 8, 100].map(bf16Bits))) },
    // F16 bits of 1, -2, 0.5
    { name: 'h', dtype: 'F16', shape: [3], data: u8(new Uint16Array([0x3c00, 0xc000, 0x3800])) },
    { name: 'd', dtype: 'F64', shape: [3], data: u8(new Float64Array([1.5, -0.25, 1024])) },
    { name: 'i', dtype: 'I32', shape: [5], data: u8(new Int32Array([1, -2, 3, -4, 2147483647])) },
    { name: 'l', dtype: 'I64', shape: [2], data: u8(new BigInt64Array([-1n, 1n << 40n])) },
    { name: 'u', dtype: 'U8', shape: [7], data: new Uint8Array([0, 1, 2, 3, 250, 251, 255]) },
  ];
}

export const sampleBytes = () => makeSafetensors(sampleTensors(), { format: 'pt' });
export { bf16Bits };
