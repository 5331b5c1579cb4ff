// The tensor detail view: a modal <dialog> opened from a row of the tensor table. The
// worker asks the core for the tensor's streamed statistics (model.stats(name, { detail:
// true })): the core reads it piece by piece, twice, and posts back only a summary
// (tensor-stats.js): the first values, min/max/mean/std, NaN and infinity counts, a 64-bin
// histogram and a heatmap — never the values themselves, so a 1 GiB tensor costs the tab
// a piece, not a gigabyte. A progress bar follows the passes; Cancel stops the reading.
//
// Escape, the close button or a click on the backdrop close it; closing cancels a
// computation still running and returns focus to the row that opened it.

import { formatInteger, formatShape, formatValue } from './format.js';
import { renderHistogram } from './histogram.js';
import { renderHeatmap } from './heatmap.js';

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  node.append(...children);
  return node;
}

// A value with its full precision on hover (and in data-value, for the tests).
function valueNode(tag, v, props = {}) {
  const node = el(tag, { ...props, textContent: formatValue(v) });
  node.title = String(v);
  node.dataset.value = String(v);
  return node;
}

function fact(term, value, title = '') {
  const dd = el('dd', { textContent: value });
  if (title) dd.title = title;
  return el('div', {}, el('dt', { textContent: term }), dd);
}

export class TensorView {
  // dialog: the <dialog>; core: CoreClient; busy(): whether another job runs (the
  // request then waits for it in the worker's queue); returnFocus(name): focus the opener.
  constructor({ dialog, title, body, closeButton, core, busy, returnFocus }) {
    Object.assign(this, { dialog, title, body, core, busy, returnFocus });
    this.job = null;
    this.name = null;
    closeButton.addEventListener('click', () => this.close());
    // The dialog element itself is only hit outside its content box: the backdrop.
    dialog.addEventListener('click', (event) => { if (event.target === dialog) this.close(); });
    dialog.addEventListener('close', () => this.onClosed());
  }

  get isOpen() {
    return this.dialog.open;
  }

  // tensor: an entry of info.tensors.
  async open(tensor) {
    this.cancel();
    this.name = tensor.name;
    this.title.replaceChildren(...breakable(tensor.name));
    this.title.title = tensor.name;
    const status = this.status(tensor);
    this.body.replaceChildren(this.factsList(tensor, null), status.node);
    this.body.setAttribute('aria-busy', 'true');
    if (!this.dialog.open) this.dialog.showModal();

    const job = this.core.request('tensorStats', { name: tensor.name }, { onProgress: status.update });
    this.job = job;
    status.cancel.addEventListener('click', () => job.cancel());
    try {
      const summary = await job.promise;
      if (this.job !== job) return; // closed or replaced meanwhile
      this.body.replaceChildren(this.factsList(tensor, summary), ...this.results(tensor, summary));
    } catch (error) {
      if (this.job !== job) return;
      if (error.code === 'cancelled') this.body.replaceChildren(this.factsList(tensor, null), this.cancelled(tensor));
      else this.body.replaceChildren(this.factsList(tensor, null), errorNode(error));
    } finally {
      if (this.job === job) {
        this.job = null;
        this.body.removeAttribute('aria-busy');
      }
    }
  }

  close() {
    if (this.dialog.open) this.dialog.close();
  }

  cancel() {
    this.job?.cancel();
    this.job = null;
  }

  onClosed() {
    this.cancel();
    this.body.removeAttribute('aria-busy');
    const { name } = this;
    this.name = null;
    if (name !== null) this.returnFocus(name);
  }

  factsList(tensor, summary) {
    const facts = [
      fact('Stored dtype', tensor.storedDtype || tensor.dtype),
      fact('Shape', formatShape(tensor.shape), JSON.stringify(tensor.shape)),
      fact('Elements', formatInteger(tensor.parameters)),
    ];
    if (tensor.scheme) {
      facts.push(fact('Scheme', `${tensor.scheme} (${tensor.variant})`, `${tensor.bitsPerWeight.toFixed(3)} bits per weight`));
      facts.push(fact('Producer returns', tensor.naturalDtype));
      facts.push(partsFact(tensor.parts));
    }
    if (summary) {
      const as = summary.kind === 'raw' ? 'stored bytes' : summary.dtype;
      facts.push(fact('Values read as', as, summary.kind === 'float' && summary.dtype !== tensor.dtype ? 'dequantized by the core' : ''));
    }
    return el('dl', { className: 'facts detail-facts' }, ...facts);
  }

  // { node, update({done, total}), cancel (the button) }: what the reading is at. The core
  // reads the tensor twice (statistics, then the histogram): one step per piece and pass.
  status(tensor) {
    const waiting = this.busy() ? 'Waiting for the running job, then reading' : 'Reading';
    const spinner = el('span', { className: 'spinner' });
    spinner.setAttribute('aria-hidden', 'true');
    const text = el('span', { className: 'detail-status-text', textContent: `${waiting} ${tensor.name} and computing statistics…` });
    const bar = el('progress', { className: 'detail-progress', max: 1 });
    bar.setAttribute('aria-label', `Reading ${tensor.name}`);
    const cancel = el('button', { type: 'button', className: 'detail-cancel', textContent: 'Cancel' });
    const node = el('div', { className: 'detail-status' }, spinner, el('p', { role: 'status' }, text), bar, cancel);
    const update = ({ done, total }) => {
      bar.value = done / total;
      const pass = done * 2 <= total ? 'statistics' : 'histogram';
      text.textContent = `Reading ${tensor.name}: ${Math.floor((100 * done) / total)}% (${pass}, step ${done} of ${total})`;
    };
    return { node, update, cancel };
  }

  // After Cancel: the dialog stays open, the page stays usable, and the reading can start again.
  cancelled(tensor) {
    const again = el('button', { type: 'button', className: 'detail-again', textContent: 'Read again' });
    again.addEventListener('click', () => this.open(tensor));
    return el('div', { className: 'detail-cancelled' },
      el('p', { role: 'status', textContent: 'Cancelled: the statistics were not computed.' }), again);
  }

  results(tensor, summary) {
    if (summary.kind === 'raw') {
      return [
        el('p', { className: 'muted', textContent: `The core does not decode ${tensor.dtype} to numbers; these are the first of its ${formatInteger(summary.bytes)} stored bytes.` }),
        headList(summary.head.map((b) => b.toString(16).padStart(2, '0')), 'First bytes (hex)'),
      ];
    }
    const parts = [statsSection(summary)];
    if (summary.histogram) parts.push(histogramSection(summary));
    if (summary.heatmap) parts.push(heatmapSection(summary.heatmap));
    parts.push(headList(summary.head, `First ${summary.head.length} values`, summary.elements));
    return parts;
  }
}

// A name as text that may break after a dot or an underscore (<wbr>), not mid-word.
function breakable(name) {
  return name.split(/(?<=[._])/).flatMap((piece) => [piece, el('wbr')]);
}

// A quantized weight's stored tensors, one per line across the whole width: long names
// break only after a dot or an underscore, never mid-word, and never push the stats aside.
function partsFact(parts) {
  const list = el('ul', { className: 'parts-list' });
  for (const [role, name] of Object.entries(parts)) {
    const code = el('code', {}, ...breakable(name));
    list.append(el('li', {}, el('span', { className: 'muted', textContent: `${role}: ` }), code));
  }
  const node = el('div', { className: 'wide' }, el('dt', { textContent: 'Parts' }), el('dd', {}, list));
  return node;
}

function statsSection({ stats, kind }) {
  const rows = [];
  const stat = (key, term, node) => rows.push(el('div', { className: 'stat' }, el('dt', { textContent: term }), node));
  const none = () => el('dd', { textContent: '—', title: 'no finite values' });
  stat('min', 'Min', stats.min === null ? none() : valueNode('dd', stats.min));
  stat('max', 'Max', stats.max === null ? none() : valueNode('dd', stats.max));
  stat('mean', 'Mean', stats.mean === null ? none() : valueNode('dd', stats.mean));
  stat('std', 'Std deviation', stats.std === null ? none() : valueNode('dd', stats.std));
  stat('nan', 'NaN', el('dd', { textContent: formatInteger(stats.nan) }));
  stat('posInf', '+Inf', el('dd', { textContent: formatInteger(stats.posInf) }));
  stat('negInf', '−Inf', el('dd', { textContent: formatInteger(stats.negInf) }));
  const keys = ['min', 'max', 'mean', 'std', 'nan', 'posInf', 'negInf'];
  rows.forEach((row, i) => { row.dataset.stat = keys[i]; });
  const counted = [stats.nan, stats.posInf, stats.negInf].some((n) => n > 0)
    ? `over the ${formatInteger(stats.finite)} finite values`
    : `over all ${formatInteger(stats.finite)} values`;
  const note = kind === 'float'
    ? `Computed in float64 ${counted}; std is the population standard deviation. Hover a number for its full precision.`
    : `Computed in float64 ${counted}; std is the population standard deviation.`;
  return el('section', { className: 'detail-section' },
    el('h3', { textContent: 'Statistics' }),
    el('dl', { className: 'facts stats' }, ...rows),
    el('p', { className: 'muted note', textContent: note }));
}

function histogramSection({ histogram, stats }) {
  const bins = histogram.counts.length;
  const label = `Histogram of ${formatInteger(stats.finite)} finite values in ${bins} bins from ${formatValue(histogram.lo)} to ${formatValue(histogram.hi)}`;
  // Weights often have a few outliers far out: a log count axis shows the tails.
  const toggle = el('input', { type: 'checkbox', id: 'histogram-log' });
  let chart = renderHistogram(histogram, label);
  toggle.addEventListener('change', () => {
    const next = renderHistogram(histogram, label, { log: toggle.checked });
    chart.replaceWith(next);
    chart = next;
  });
  return el('section', { className: 'detail-section' },
    el('div', { className: 'section-head' },
      el('h3', { textContent: 'Distribution' }),
      el('label', { className: 'checkbox' }, toggle, 'Log count axis')),
    el('figure', { className: 'histogram-figure' },
      chart,
      el('figcaption', { className: 'muted', textContent: `${bins} equal bins from min to max; ${formatInteger(stats.finite)} finite values. Hover a bar for its range and count.` })));
}

// A 2-D (or wider) tensor as a picture: |value| by default, signed on request.
function heatmapSection(heatmap) {
  const { rows, cols, cellRows, cellCols } = heatmap;
  const toggle = el('input', { type: 'checkbox', id: 'heatmap-signed' });
  const label = () => `Heatmap of ${formatInteger(rows)} × ${formatInteger(cols)} values in ${cellRows} × ${cellCols} cells, `
    + (toggle.checked ? 'signed mean' : 'mean absolute value');
  const draw = () => {
    const canvas = renderHeatmap(heatmap, { signed: toggle.checked });
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', label());
    // Keep the tensor's aspect within the dialog, never wider than it.
    canvas.style.aspectRatio = `${cellCols} / ${cellRows}`;
    return canvas;
  };
  let canvas = draw();
  toggle.addEventListener('change', () => {
    const next = draw();
    canvas.replaceWith(next);
    canvas = next;
  });
  const per = rows === cellRows && cols === cellCols ? 'one value per cell'
    : `each cell the mean of about ${formatInteger(Math.ceil(rows / cellRows))} × ${formatInteger(Math.ceil(cols / cellCols))} values`;
  return el('section', { className: 'detail-section heatmap-section' },
    el('div', { className: 'section-head' },
      el('h3', { textContent: 'Heatmap' }),
      el('label', { className: 'checkbox' }, toggle, 'Signed (blue negative, red positive)')),
    el('figure', { className: 'heatmap-figure' }, canvas,
      el('figcaption', { className: 'muted', textContent: `Rows × columns: ${formatInteger(rows)} × ${formatInteger(cols)} as ${cellRows} × ${cellCols} cells, ${per}; darker is larger. Grey: no finite value.` })));
}

function headList(values, heading, total = values.length) {
  const list = el('ol', { className: 'head-values' });
  values.forEach((v, i) => {
    list.append(el('li', {}, el('span', { className: 'index', textContent: String(i) }),
      typeof v === 'string' && !/^-?\d+$/.test(v) ? el('code', { textContent: v }) : valueNode('code', v)));
  });
  const more = total > values.length ? ` of ${formatInteger(total)}` : '';
  return el('section', { className: 'detail-section' }, el('h3', { textContent: `${heading}${more}` }), list);
}

function errorNode(error) {
  const node = el('div', { className: 'detail-error', role: 'alert' },
    el('p', {}, el('strong', { textContent: 'Could not read this tensor: ' }),
      el('code', { className: 'error-code', textContent: error.code }), ' ',
      el('span', { className: 'detail-error-message', textContent: error.message })));
  node.dataset.code = error.code;
  return node;
}
