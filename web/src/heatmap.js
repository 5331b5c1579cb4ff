// A tensor's heatmap: a downsampled picture of a 2-D weight (an N-D tensor as
// shape[0] × the rest), each cell the mean of the values it covers, as |value| (where the
// weight is large) or signed (where it is positive or negative). heatmapOf is computed in
// the worker beside the statistics (no DOM); only the cells, at most 256 × 256, cross to
// the page, which draws them on a canvas (renderHeatmap).

export const HEATMAP_CELLS = 256;

// values: a number typed array (not BigInt); shape: the tensor's. Null for fewer than two
// dimensions or an empty tensor.
//   { rows, cols (the tensor's, as drawn), cellRows, cellCols, abs: Float32Array, signed:
//     Float32Array (row-major cell means; NaN where a cell saw no finite value) }
export function heatmapOf(values, shape, max = HEATMAP_CELLS) {
  if (shape.length < 2) return null;
  const rows = Number(shape[0]);
  const cols = shape.slice(1).reduce((n, d) => n * Number(d), 1);
  if (rows === 0 || cols === 0 || values.length < rows * cols) return null;
  const cellRows = Math.min(rows, max);
  const cellCols = Math.min(cols, max);
  const colCell = new Int32Array(cols);
  for (let c = 0; c < cols; c += 1) colCell[c] = Math.floor((c * cellCols) / cols);
  const cells = cellRows * cellCols;
  const sumAbs = new Float64Array(cells);
  const sum = new Float64Array(cells);
  const count = new Float64Array(cells);
  for (let r = 0; r < rows; r += 1) {
    const base = Math.floor((r * cellRows) / rows) * cellCols;
    const at = r * cols;
    for (let c = 0; c < cols; c += 1) {
      const x = values[at + c];
      if (!Number.isFinite(x)) continue;
      const k = base + colCell[c];
      sum[k] += x;
      sumAbs[k] += Math.abs(x);
      count[k] += 1;
    }
  }
  const abs = new Float32Array(cells);
  const signed = new Float32Array(cells);
  for (let k = 0; k < cells; k += 1) {
    abs[k] = count[k] > 0 ? sumAbs[k] / count[k] : NaN;
    signed[k] = count[k] > 0 ? sum[k] / count[k] : NaN;
  }
  return { rows, cols, cellRows, cellCols, abs, signed };
}

// The colour of a cell: |value| from the panel colour to a dark blue; signed from blue
// (negative) through the panel colour to red (positive). Scaled to the largest |cell|.
function colorOf(v, scale, signed) {
  if (Number.isNaN(v)) return [128, 128, 128];
  const t = scale > 0 ? Math.min(1, Math.abs(v) / scale) : 0;
  const to = !signed || v >= 0 ? (signed ? [178, 24, 43] : [20, 44, 120]) : [33, 102, 172];
  const from = [247, 247, 245];
  return from.map((f, i) => Math.round(f + (to[i] - f) * t));
}

// A <canvas> of cellCols × cellRows pixels (CSS scales it up, pixelated).
export function renderHeatmap(heatmap, { signed = false } = {}) {
  const { cellRows, cellCols } = heatmap;
  const cells = signed ? heatmap.signed : heatmap.abs;
  let scale = 0;
  for (const v of cells) if (Math.abs(v) > scale) scale = Math.abs(v);
  const canvas = document.createElement('canvas');
  canvas.width = cellCols;
  canvas.height = cellRows;
  canvas.className = 'heatmap';
  const context = canvas.getContext('2d');
  const image = context.createImageData(cellCols, cellRows);
  for (let k = 0; k < cells.length; k += 1) {
    const [r, g, b] = colorOf(cells[k], scale, signed);
    image.data.set([r, g, b, 255], 4 * k);
  }
  context.putImageData(image, 0, 0);
  canvas.dataset.scale = String(scale);
  return canvas;
}
