// Number formatting shared by the views. A fixed locale keeps the page (and its tests)
// identical everywhere.

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const short = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

export function formatInteger(n) {
  return integer.format(n);
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

// 61952 -> "60.5 KiB"
export function formatBytes(n) {
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${short.format(value)} ${BYTE_UNITS[unit]}`;
}

const COUNT_UNITS = ['', 'K', 'M', 'B', 'T'];

// 7241732096 -> "7.24 B" (parameters, the way model cards count them)
export function formatCount(n) {
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < COUNT_UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? String(value) : `${short.format(value)} ${COUNT_UNITS[unit]}`;
}

// [64, 32] -> "64 × 32"; a rank-0 tensor is a scalar.
export function formatShape(shape) {
  return shape.length === 0 ? 'scalar' : shape.join(' × ');
}

export function formatPercent(part, whole) {
  if (whole === 0) return '0%';
  return `${short.format((100 * part) / whole)}%`;
}

// A value in at most 6 significant digits (integers below 1e21 exactly): 0.123456789 ->
// "0.123457", 1e-9 -> "1e-9". The full value goes in a title beside it.
export function formatValue(v) {
  if (typeof v !== 'number') return String(v); // 64-bit integers arrive as decimal strings
  if (Number.isInteger(v) && Math.abs(v) < 1e21) return String(v);
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : v < 0 ? '−Inf' : 'NaN';
  return String(Number(v.toPrecision(6)));
}
