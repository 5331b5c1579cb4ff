// The tensor table: text filter, click-to-sort columns, and windowed rendering so a
// model with tens of thousands of tensors scrolls as smoothly as one with six. Only the
// rows in view (plus a margin) exist in the DOM; two spacer rows stand in for the rest,
// which keeps real <table> semantics and column alignment. Each row's name is a button
// that opens the tensor's detail view (a click anywhere on the row does too). A name too
// long for its column is shortened in the middle (names.js), to the characters that fit;
// the full name is the button's accessible name and shows on hover and focus (name-tip.js).

import { formatBytes, formatInteger, formatShape } from './format.js';
import { compareNatural, shortenName } from './names.js';
import { NameTip } from './name-tip.js';

const OVERSCAN = 12;          // rows rendered above and below the visible ones
const DEFAULT_ROW_HEIGHT = 29; // px; replaced by the measured height after the first render

const COMPARE = {
  name: (a, b) => compareNatural(a.name, b.name),
  dtype: (a, b) => (a.dtype < b.dtype ? -1 : a.dtype > b.dtype ? 1 : 0),
  scheme: (a, b) => (a.scheme < b.scheme ? -1 : a.scheme > b.scheme ? 1 : 0),
  shape: compareShapes,
  parameters: (a, b) => a.parameters - b.parameters,
  nbytes: (a, b) => a.nbytes - b.nbytes,
};

function compareShapes(a, b) {
  const n = Math.min(a.shape.length, b.shape.length);
  for (let i = 0; i < n; i += 1) {
    if (a.shape[i] !== b.shape[i]) return a.shape[i] - b.shape[i];
  }
  return a.shape.length - b.shape.length;
}

export class TensorTable {
  constructor({ scroll, table, body, filterInput, countLabel, onOpen = () => {} }) {
    this.scroll = scroll;
    this.table = table;
    this.body = body;
    this.filterInput = filterInput;
    this.countLabel = countLabel;
    this.headers = [...table.tHead.querySelectorAll('th[data-key]')];
    this.tensors = [];
    this.view = [];           // indices into tensors, filtered and sorted
    this.sortKey = null;      // null: file order
    this.sortDir = 1;
    this.rowHeight = DEFAULT_ROW_HEIGHT;
    this.renderQueued = false;
    this.window = { start: -1, end: -1 };
    this.nameRoom = Infinity; // characters that fit in the name column; measured when rendered
    this.charWidth = 0;
    this.tip = new NameTip(scroll);

    for (const th of this.headers) {
      th.querySelector('button').addEventListener('click', () => this.sortBy(th.dataset.key));
    }
    filterInput.addEventListener('input', () => {
      this.scroll.scrollTop = 0; // a new filter starts from its first match
      this.refresh();
    });
    body.addEventListener('click', (event) => {
      const row = event.target.closest('tr.tensor-row');
      // A drag that selected text is not a click on the row.
      if (!row || (event.target.tagName !== 'BUTTON' && window.getSelection()?.toString())) return;
      const tensor = this.tensors.find((t) => t.name === row.dataset.name);
      if (!tensor) return;
      // Closing the dialog, the browser itself returns focus to what was focused when it
      // opened, before the page's close handler runs; a click on a cell focuses the scroll
      // container. Focus the row's button first, so both put focus back on the row.
      row.querySelector('button.tensor-open')?.focus({ preventScroll: true });
      onOpen(tensor);
    });
    scroll.addEventListener('scroll', () => this.queueRender(), { passive: true });
    new ResizeObserver(() => this.queueRender()).observe(scroll);
  }

  setTensors(tensors) {
    this.tensors = tensors;
    // The scheme column is only for quantized models.
    this.table.classList.toggle('no-scheme', !tensors.some((t) => t.scheme));
    this.tip.hide();
    this.scroll.scrollTop = 0;
    this.refresh();
  }

  // Clicking a column sorts ascending; clicking it again reverses.
  sortBy(key) {
    if (this.sortKey === key) {
      this.sortDir = -this.sortDir;
    } else {
      this.sortKey = key;
      this.sortDir = 1;
    }
    for (const th of this.headers) {
      const active = th.dataset.key === this.sortKey;
      th.setAttribute('aria-sort', active ? (this.sortDir > 0 ? 'ascending' : 'descending') : 'none');
    }
    this.refresh();
  }

  // Whether a tensor passes the filter: every word typed is in its name, dtype or scheme.
  matches(t) {
    const terms = this.filterInput.value.toLowerCase().split(/\s+/).filter(Boolean);
    if (terms.length === 0) return true;
    const haystack = `${t.name} ${t.dtype} ${t.scheme}`.toLowerCase();
    return terms.every((term) => haystack.includes(term));
  }

  refresh() {
    const view = [];
    for (let i = 0; i < this.tensors.length; i += 1) {
      if (this.matches(this.tensors[i])) view.push(i);
    }
    if (this.sortKey) {
      const compare = COMPARE[this.sortKey];
      const dir = this.sortDir;
      const ts = this.tensors;
      view.sort((i, j) => dir * compare(ts[i], ts[j]) || i - j);
    }
    this.view = view;
    const total = this.tensors.length;
    this.countLabel.textContent = view.length === total
      ? `${formatInteger(total)} ${total === 1 ? 'tensor' : 'tensors'}`
      : `${formatInteger(view.length)} of ${formatInteger(total)} tensors`;
    this.window = { start: -1, end: -1 };
    this.render();
  }

  queueRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      this.render();
    });
  }

  render() {
    const count = this.view.length;
    const headHeight = this.table.tHead.offsetHeight;
    const top = Math.max(0, this.scroll.scrollTop - headHeight);
    const visible = Math.ceil(this.scroll.clientHeight / this.rowHeight) + 1;
    // Clamped, so a scroll position left over from a longer view still shows its end.
    const start = Math.max(0, Math.min(Math.floor(top / this.rowHeight), count - visible) - OVERSCAN);
    const end = Math.min(count, start + visible + 2 * OVERSCAN);
    if (start === this.window.start && end === this.window.end) return;
    this.window = { start, end };

    const fragment = document.createDocumentFragment();
    // A spacer spans the columns shown: spanning a hidden one would add a column.
    const columns = this.table.classList.contains('no-scheme') ? 5 : 6;
    if (start > 0) fragment.append(spacerRow(start * this.rowHeight, columns));
    for (let v = start; v < end; v += 1) {
      fragment.append(this.row(this.tensors[this.view[v]], v));
    }
    if (end < count) fragment.append(spacerRow((count - end) * this.rowHeight, columns));
    this.body.replaceChildren(fragment);

    const first = this.body.querySelector('tr.tensor-row');
    if (first && first.offsetHeight > 0 && first.offsetHeight !== this.rowHeight) {
      this.rowHeight = first.offsetHeight;
      this.window = { start: -1, end: -1 };
      this.queueRender();
    }
    const room = first ? this.measureRoom(first.querySelector('button.tensor-open')) : this.nameRoom;
    if (room !== this.nameRoom) {
      this.nameRoom = room;
      this.window = { start: -1, end: -1 };
      this.queueRender();
    }
  }

  // How many characters of the (monospace) name font fit in the name button.
  measureRoom(button) {
    if (!this.charWidth) {
      const probe = document.createElement('span');
      probe.style.cssText = 'position:absolute;visibility:hidden;white-space:pre';
      probe.textContent = '0123456789'.repeat(10);
      button.append(probe);
      this.charWidth = probe.getBoundingClientRect().width / 100;
      probe.remove();
    }
    const width = button.clientWidth;
    if (!(width > 0 && this.charWidth > 0)) return this.nameRoom;
    return Math.max(8, Math.floor(width / this.charWidth));
  }

  row(t, position) {
    const tr = document.createElement('tr');
    // Stripes follow the position in the view, not in the DOM, so they hold still while scrolling.
    tr.className = position % 2 ? 'tensor-row odd' : 'tensor-row';
    tr.dataset.name = t.name;
    const name = document.createElement('th');
    name.scope = 'row';
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'tensor-open';
    open.textContent = shortenName(t.name, this.nameRoom);
    if (open.textContent !== t.name) open.setAttribute('aria-label', t.name);
    open.setAttribute('aria-haspopup', 'dialog');
    name.append(open);
    tr.append(
      name,
      cell(t.dtype, 'dtype', t.storedDtype ? `stored as ${t.storedDtype}` : ''),
      t.scheme
        ? cell(`${t.scheme} · ${t.bitsPerWeight.toFixed(2)} bits`, 'scheme', `${t.scheme}: ${t.variant}`)
        : cell('—', 'scheme muted'),
      cell(formatShape(t.shape), 'shape', JSON.stringify(t.shape)),
      cell(formatInteger(t.parameters), 'num'),
      cell(formatBytes(t.nbytes), 'num', `${formatInteger(t.nbytes)} bytes`),
    );
    return tr;
  }
}

// The open button of a rendered row, if that row is in the DOM.
export function rowButton(body, name) {
  for (const tr of body.querySelectorAll('tr.tensor-row')) {
    if (tr.dataset.name === name) return tr.querySelector('button.tensor-open');
  }
  return null;
}

function cell(text, className = '', title = '') {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  if (title) td.title = title;
  return td;
}

function spacerRow(height, columns) {
  const tr = document.createElement('tr');
  tr.className = 'spacer';
  tr.setAttribute('aria-hidden', 'true');
  tr.style.height = `${height}px`;
  const td = document.createElement('td');
  td.colSpan = columns;
  tr.append(td);
  return tr;
}
