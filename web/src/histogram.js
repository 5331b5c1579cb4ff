// A histogram as SVG: one <rect class="hist-bar"> per bin (data-count, data-lo, data-hi,
// and a <title> shown on hover), a y axis in counts (linear, or logarithmic for heavy
// tails) and an x axis in values. Sized by its viewBox, so it scales with the panel;
// colours come from style.css.

import { formatInteger, formatValue } from './format.js';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 640;
const HEIGHT = 230;
const MARGIN = { top: 12, right: 14, bottom: 46, left: 56 };

function svg(tag, attrs = {}, text = '') {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text) node.textContent = text;
  return node;
}

// `histogram`: { lo, hi, counts } (tensor-stats.js). `label` describes it for screen readers.
export function renderHistogram({ lo, hi, counts }, label, { log = false } = {}) {
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const peak = Math.max(1, ...counts);
  const bins = counts.length;
  const step = plotW / bins;
  const gap = step > 4 ? 1 : 0;
  const x0 = MARGIN.left;
  const y0 = MARGIN.top + plotH; // the baseline
  // Bar height as a fraction of the plot: log1p keeps a count of 1 visible beside 10^6.
  const scale = log ? (c) => Math.log1p(c) / Math.log1p(peak) : (c) => c / peak;

  const root = svg('svg', {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: 'histogram', role: 'img', 'aria-label': label,
  });

  // Grid lines and y labels: 0, the peak and, between them, half the peak (linear) or
  // the powers of ten (log) — those not too close to the peak's label.
  const ticks = [0, peak];
  if (log) {
    for (let p = 1; p < peak; p *= 10) if (scale(p) > 0.12 && scale(p) < 0.9) ticks.push(p);
  } else if (peak >= 4) {
    ticks.push(Math.round(peak / 2));
  }
  for (const count of ticks) {
    const y = y0 - scale(count) * plotH;
    root.append(svg('line', { class: count === 0 ? 'axis' : 'grid', x1: x0, x2: x0 + plotW, y1: y, y2: y }));
    root.append(svg('text', { class: 'tick', x: x0 - 6, y: y + 4, 'text-anchor': 'end' }, formatInteger(count)));
  }

  const bars = svg('g', { class: 'bars' });
  const width = (hi - lo) / bins;
  counts.forEach((count, i) => {
    const h = count === 0 ? 0 : Math.max(1, scale(count) * plotH); // a non-empty bin always shows
    const binLo = lo + i * width;
    const binHi = i === bins - 1 ? hi : lo + (i + 1) * width;
    const rect = svg('rect', {
      class: 'hist-bar',
      x: (x0 + i * step + gap / 2).toFixed(2),
      y: (y0 - h).toFixed(2),
      width: (step - gap).toFixed(2),
      height: h.toFixed(2),
      'data-count': count,
      'data-lo': binLo,
      'data-hi': binHi,
    });
    const close = i === bins - 1 ? ']' : ')';
    rect.append(svg('title', {}, `[${formatValue(binLo)}, ${formatValue(binHi)}${close}: ${formatInteger(count)}`));
    bars.append(rect);
  });
  root.append(bars);

  // x ticks at the ends and the middle of the range.
  for (const fraction of [0, 0.5, 1]) {
    const x = x0 + fraction * plotW;
    root.append(svg('line', { class: 'axis', x1: x, x2: x, y1: y0, y2: y0 + 5 }));
    const anchor = fraction === 0 ? 'start' : fraction === 1 ? 'end' : 'middle';
    root.append(svg('text', { class: 'tick', x, y: y0 + 18, 'text-anchor': anchor }, formatValue(lo + fraction * (hi - lo))));
  }
  root.append(svg('text', { class: 'axis-title', x: x0 + plotW / 2, y: HEIGHT - 6, 'text-anchor': 'middle' }, 'value'));
  root.append(svg('text', {
    class: 'axis-title', x: 0, y: 0, 'text-anchor': 'middle',
    transform: `translate(14 ${MARGIN.top + plotH / 2}) rotate(-90)`,
  }, log ? 'count (log)' : 'count'));
  return root;
}
