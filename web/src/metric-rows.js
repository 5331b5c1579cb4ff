// Rows of the per-tensor error tables (Forget's Lethe table, Compare's table): the numbers
// spelled as the CLI's tables spell them.

// Errors in 3 significant digits; '–' where there is no number.
export const sci = (v) => (typeof v === 'number' ? String(Number(v.toPrecision(3))) : '–');
// SNR and cosine fixed; null is an infinite SNR (an exact copy).
export const fixed = (v, d) => (v === null ? '∞' : typeof v === 'number' ? v.toFixed(d) : '–');

// A <tr> for `name`, its cells' text from `cells`; those from `firstNumber` on are numbers.
export function metricRow(name, cells, firstNumber) {
  const tr = document.createElement('tr');
  tr.dataset.name = name;
  cells.forEach((text, i) => {
    const td = document.createElement('td');
    td.textContent = text;
    if (i >= firstNumber) td.className = 'num';
    tr.append(td);
  });
  return tr;
}
