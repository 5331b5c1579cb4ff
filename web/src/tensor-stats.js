// Statistics of one tensor's values, computed in the worker (worker.js) so only this
// summary — never the values — crosses to the page. No DOM here: the Node tests can import
// it too.
//
// Input: what `model.tensor(name, { to: 'f32' })` returns. Float tensors (every
// safetensors float dtype the core casts, every GGUF block type) arrive as Float32Array;
// integer tensors as their own typed arrays (I32, I64) or as stored bytes, which are read
// here with the dtype's array type. Dtypes the core returns as bytes and that have no
// JavaScript array type (F8_*, F6_*, F4, C64) are "raw": only their first bytes are shown.

const BYTE_VIEWS = {
  U8: Uint8Array, BOOL: Uint8Array, I8: Int8Array, U16: Uint16Array, I16: Int16Array,
  U32: Uint32Array, I32: Int32Array, U64: BigUint64Array, I64: BigInt64Array,
};

export const DEFAULT_BINS = 64;
export const DEFAULT_HEAD = 16;

// The values of a tensor() result as a typed array, or null when they are raw bytes.
export function valuesOf({ dtype, data }) {
  if (data instanceof Float32Array || data instanceof Float64Array || data instanceof Int32Array
    || data instanceof BigInt64Array || data instanceof BigUint64Array) return data;
  const View = BYTE_VIEWS[dtype];
  if (!View || !(data instanceof Uint8Array)) return null;
  if (View === Uint8Array) return data;
  // Safetensors and GGUF data are little-endian, as is every host that runs the page.
  // (tensor() returns a fresh buffer, so the offset is aligned.)
  return new View(data.buffer, data.byteOffset, Math.floor(data.byteLength / View.BYTES_PER_ELEMENT));
}

// { kind: 'float'|'int'|'raw', dtype (of the values), elements, head, stats, histogram }
//   head:      the first values (numbers; 64-bit integers as decimal strings; raw: bytes)
//   stats:     { finite, nan, posInf, negInf, min, max, mean, std } over the finite values,
//              in float64, in one pass (Welford); std is the population standard deviation.
//              min/max of 64-bit integers are exact decimal strings. null if raw.
//   histogram: { lo, hi, counts } — `bins` equal bins from min to max (a second pass);
//              null when there is no finite value.
export function summarize(result, { bins = DEFAULT_BINS, head = DEFAULT_HEAD } = {}) {
  const elements = result.shape.reduce((n, d) => n * Number(d), 1);
  const values = valuesOf(result);
  if (!values) {
    return {
      kind: 'raw', dtype: result.dtype, elements,
      head: Array.from(result.data.subarray(0, head)),
      bytes: result.data.byteLength, stats: null, histogram: null,
    };
  }
  const big = values instanceof BigInt64Array || values instanceof BigUint64Array;
  const float = values instanceof Float32Array || values instanceof Float64Array;
  const stats = big ? bigStats(values) : numberStats(values);
  const histogram = stats.finite > 0 ? histogramOf(values, Number(stats.min), Number(stats.max), bins) : null;
  const first = Array.from(values.subarray(0, head), (v) => (big ? v.toString() : v));
  return { kind: float ? 'float' : 'int', dtype: result.dtype, elements, head: first, stats, histogram };
}

function numberStats(values) {
  let finite = 0;
  let nan = 0;
  let posInf = 0;
  let negInf = 0;
  let min = Infinity;
  let max = -Infinity;
  let mean = 0;
  let m2 = 0;
  for (let i = 0; i < values.length; i += 1) {
    const x = values[i];
    if (x !== x) { nan += 1; continue; } // eslint-disable-line no-self-compare
    if (x === Infinity) { posInf += 1; continue; }
    if (x === -Infinity) { negInf += 1; continue; }
    finite += 1;
    if (x < min) min = x;
    if (x > max) max = x;
    const delta = x - mean;
    mean += delta / finite;
    m2 += delta * (x - mean);
  }
  return finish({ finite, nan, posInf, negInf, min, max, mean, m2 });
}

// 64-bit integers: min and max exactly (BigInt), mean and std in float64.
function bigStats(values) {
  let min = null;
  let max = null;
  let mean = 0;
  let m2 = 0;
  for (let i = 0; i < values.length; i += 1) {
    const v = values[i];
    if (min === null || v < min) min = v;
    if (max === null || v > max) max = v;
    const x = Number(v);
    const delta = x - mean;
    mean += delta / (i + 1);
    m2 += delta * (x - mean);
  }
  return finish({ finite: values.length, nan: 0, posInf: 0, negInf: 0, min: min?.toString() ?? null, max: max?.toString() ?? null, mean, m2 });
}

function finish({ finite, nan, posInf, negInf, min, max, mean, m2 }) {
  if (finite === 0) return { finite, nan, posInf, negInf, min: null, max: null, mean: null, std: null };
  return { finite, nan, posInf, negInf, min, max, mean, std: Math.sqrt(m2 / finite) };
}

// Equal bins over [lo, hi]; the maximum falls in the last bin. A single distinct value gets
// the range [v - 0.5, v + 0.5] (so it lands in the middle bin).
export function histogramOf(values, min, max, bins = DEFAULT_BINS) {
  let lo = min;
  let hi = max;
  if (!(hi > lo)) { lo -= 0.5; hi += 0.5; }
  // Halved, the span of ±3.4e38 (or ±1.8e308) stays finite.
  const halfSpan = hi / 2 - lo / 2;
  const scale = bins / halfSpan;
  const counts = new Array(bins).fill(0);
  const big = values instanceof BigInt64Array || values instanceof BigUint64Array;
  for (let i = 0; i < values.length; i += 1) {
    const x = big ? Number(values[i]) : values[i];
    if (!Number.isFinite(x)) continue;
    let b = Math.floor((x / 2 - lo / 2) * scale);
    if (b >= bins) b = bins - 1;
    else if (b < 0) b = 0;
    counts[b] += 1;
  }
  return { lo, hi, counts };
}
