// A tensor's heatmap: a downsampled picture of a 2-D weight (an N-D tensor as
// shape[0] × the rest), each cell the mean of the values it covers, as |value| (where the
// weight is large) or signed (where it is positive or negative). The core computes the
// cells, at most 256 × 256, while it streams the tensor for its statistics (npm
// model.stats(name, { detail: true }), tensor-stats.js); the page draws them on a canvas.

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
