// The detail view's summary of one tensor, from the core's streamed statistics
// (npm model.stats(name, { detail: true }), docs/json-schema.md "The stats document"). The
// core reads the tensor piece by piece, twice, and computes every number here — the
// moments, counts, histogram, first values and heatmap cells — so the tab never holds the
// tensor. This file only renames the core's fields for the view (no DOM, no arithmetic
// on values): the Node tests import it too.

// { kind: 'float'|'int'|'raw', dtype (of the values), elements, head, bytes (raw), stats,
//   histogram, heatmap }
//   head:      the first values (numbers, or 'nan' / 'inf' / '-inf'; 64-bit integers as
//              decimal strings; raw: the first stored bytes)
//   stats:     { finite, nan, posInf, negInf, min, max, mean, std } over the finite
//              values; min/max of 64-bit integers are exact decimal strings. null if raw.
//   histogram: { lo, hi, counts } (the core's equal bins from min to max); null when there
//              is no finite value.
//   heatmap:   { rows, cols, cellRows, cellCols, abs, signed } (Float32Array cell means,
//              NaN where a cell saw no finite value) or null.
export function summaryOf(core) {
  const elements = core.shape.reduce((n, d) => n * Number(d), 1);
  if (core.skipped) {
    return { kind: 'raw', dtype: core.dtype, elements, head: core.head, bytes: core.bytes, stats: null, histogram: null, heatmap: null };
  }
  const float = core.values_dtype === 'F32' || core.values_dtype === 'F64';
  const finite = core.count - core.nan - core.pos_inf - core.neg_inf;
  const stats = {
    finite, nan: core.nan, posInf: core.pos_inf, negInf: core.neg_inf,
    min: core.int_min ?? core.min, max: core.int_max ?? core.max, mean: core.mean, std: core.std,
  };
  const { histogram: h } = core;
  return {
    kind: float ? 'float' : 'int', dtype: core.values_dtype, elements,
    head: core.head.map((v) => (typeof v === 'string' ? headValue(v) : v)),
    stats,
    histogram: finite > 0 ? { lo: h.min, hi: h.max, counts: h.counts } : null,
    heatmap: core.heatmap ? heatmapOf(core.heatmap) : null,
  };
}

// 'nan' / 'inf' / '-inf' as numbers; a 64-bit integer's decimal string stays a string.
function headValue(text) {
  if (text === 'nan') return NaN;
  if (text === 'inf') return Infinity;
  if (text === '-inf') return -Infinity;
  return text;
}

function heatmapOf({ rows, cols, cell_rows: cellRows, cell_cols: cellCols, abs, signed }) {
  const cells = (values) => Float32Array.from(values, (v) => (v === null ? NaN : v));
  return { rows, cols, cellRows, cellCols, abs: cells(abs), signed: cells(signed) };
}
