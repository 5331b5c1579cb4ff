// The summary of a model-info document (docs/json-schema.md): what it is, how big, which
// dtypes, and the metadata and config files (config.json, the quantizer's own) that came
// with it. Every string from the file
// goes in through textContent, never as HTML.

import { formatBytes, formatCount, formatInteger, formatPercent } from './format.js';
import { displayTensors } from './tensors.js';

// config.json keys worth a line of their own, in display order (transformers names).
const CONFIG_KEYS = [
  'model_type', 'architectures', 'torch_dtype', 'hidden_size', 'intermediate_size',
  'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim',
  'vocab_size', 'max_position_embeddings', 'rope_theta', 'tie_word_embeddings',
];
const LONG_VALUE = 160; // metadata values longer than this fold away

export function renderSummary(container, info) {
  // The tensors the table lists (a quantized weight once, not once per stored part).
  const shown = displayTensors(info).length;
  const stored = info.tensors.length;
  const facts = [
    ['Format', info.sharded ? `${info.format}, sharded` : info.format, info.index ? `through ${info.index}` : ''],
    ['Files', `${formatInteger(info.files.length)} (${formatBytes(info.file_bytes)})`, `${formatInteger(info.file_bytes)} bytes`],
    ['Tensors', formatInteger(shown), shown === stored ? '' : `${formatInteger(stored)} stored tensors: a quantized weight's parts are counted once`],
    ['Parameters', formatCount(info.parameters), `${formatInteger(info.parameters)} parameters`],
    ['Tensor bytes', formatBytes(info.total_bytes), `${formatInteger(info.total_bytes)} bytes`],
  ];
  const parts = [definitionList(facts, 'facts')];
  if (info.logical?.length > 0) parts.push(quantizationSummary(info));
  parts.push(dtypeHistogram(info));
  if (info.files.length > 1) parts.push(fileList(info.files));
  const metadata = Object.entries(info.metadata ?? {});
  if (metadata.length > 0) parts.push(section('Metadata', metadataList(metadata)));
  if (info.config && typeof info.config === 'object') parts.push(section('config.json', configSummary(info.config)));
  if (info.quantize_config) parts.push(section(info.quantize_config.file, quantizerConfigSummary(info.quantize_config)));
  if (info.format === 'gguf' && info.details) parts.push(section('GGUF header', ggufSummary(info.details)));
  if (info.format === 'pth' && info.details) parts.push(...pthSummary(info.details));
  if ((info.format === 'npz' || info.format === 'npy') && info.details) parts.push(section('NumPy', numpySummary(info.details)));
  if (info.warnings?.length > 0) parts.push(section('Warnings', el('ul', { className: 'warnings' }, ...info.warnings.map((w) => el('li', { textContent: w })))));
  container.replaceChildren(...parts);
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  node.append(...children);
  return node;
}

function section(title, body) {
  return el('div', { className: 'summary-section' }, el('h3', { textContent: title }), body);
}

function definitionList(pairs, className = '') {
  const dl = el('dl', { className });
  for (const [term, value, title] of pairs) {
    const dd = typeof value === 'string' ? el('dd', { textContent: value }) : el('dd', {}, value);
    if (title) dd.title = title;
    dl.append(el('div', {}, el('dt', { textContent: term }), dd)); // a <div> per pair is valid in <dl>
  }
  return dl;
}

function dtypeHistogram(info) {
  const table = el('table', { className: 'dtype-table' });
  table.append(el('caption', { className: 'visually-hidden', textContent: 'Tensor bytes by dtype' }));
  const head = el('tr', {},
    el('th', { scope: 'col', textContent: 'Dtype' }),
    el('th', { scope: 'col', textContent: 'Share of bytes' }),
    el('th', { scope: 'col', className: 'num', textContent: 'Tensors' }),
    el('th', { scope: 'col', className: 'num', textContent: 'Parameters' }),
    el('th', { scope: 'col', className: 'num', textContent: 'Bytes' }));
  table.append(el('thead', {}, head));
  const body = el('tbody');
  for (const d of info.dtypes) {
    const share = info.total_bytes > 0 ? d.bytes / info.total_bytes : 0;
    const bar = el('span', { className: 'bar' });
    bar.style.width = `${(share * 100).toFixed(2)}%`;
    body.append(el('tr', { className: 'dtype-row' },
      el('th', { scope: 'row', textContent: d.dtype }),
      el('td', { className: 'share' }, el('span', { className: 'bar-track' }, bar),
        el('span', { className: 'share-label', textContent: formatPercent(d.bytes, info.total_bytes) })),
      el('td', { className: 'num', textContent: formatInteger(d.tensors) }),
      el('td', { className: 'num', textContent: formatCount(d.parameters), title: formatInteger(d.parameters) }),
      el('td', { className: 'num', textContent: formatBytes(d.bytes), title: `${formatInteger(d.bytes)} bytes` })));
  }
  table.append(body);
  return section('Dtypes', table);
}

// What quantization took: per scheme, the weights it holds, their stored size and bits
// per weight, and what they become when remembered.
function quantizationSummary(info) {
  const schemes = new Map();
  for (const l of info.logical) {
    const s = schemes.get(l.scheme) ?? { weights: 0, parameters: 0, stored: 0, variants: new Set(), errors: 0 };
    s.weights += 1;
    s.parameters += l.parameters;
    s.stored += l.stored_bytes;
    s.variants.add(l.variant);
    if (l.error) s.errors += 1;
    schemes.set(l.scheme, s);
  }
  const table = el('table', { className: 'dtype-table quant-table' });
  table.append(el('caption', { className: 'visually-hidden', textContent: 'Quantized weights by scheme' }));
  table.append(el('thead', {}, el('tr', {},
    ...['Scheme', 'Weights', 'Parameters', 'Stored', 'Bits/weight', 'As BF16'].map((h, i) =>
      el('th', { scope: 'col', className: i ? 'num' : '', textContent: h })))));
  const body = el('tbody');
  for (const [scheme, s] of schemes) {
    const bpw = s.parameters > 0 ? (8 * s.stored / s.parameters).toFixed(2) : '—';
    body.append(el('tr', { className: 'quant-row' },
      el('th', { scope: 'row', textContent: scheme, title: [...s.variants].join('\n') }),
      el('td', { className: 'num', textContent: formatInteger(s.weights) + (s.errors ? ` (${s.errors} unreadable)` : '') }),
      el('td', { className: 'num', textContent: formatCount(s.parameters), title: formatInteger(s.parameters) }),
      el('td', { className: 'num', textContent: formatBytes(s.stored), title: `${formatInteger(s.stored)} bytes` }),
      el('td', { className: 'num', textContent: bpw }),
      el('td', { className: 'num', textContent: formatBytes(s.parameters * 2) })));
  }
  table.append(body);
  return section('Quantization', table);
}

// A PyTorch checkpoint: how it is stored, the verdict on every global its pickle names
// (nothing was ever called: the VM only builds values), and its non-tensor values.
function pthSummary(details) {
  const layout = [
    ['Container', details.container === 'zip' ? `torch.save ZIP${details.prefix ? `, prefix ${details.prefix}` : ''}` : 'legacy torch.save'],
    ['Byte order', details.byteorder ?? 'little'],
    ['Pickle protocol', String(details.pickle_protocol ?? '')],
  ];
  const globals = el('table', { className: 'dtype-table pickle-globals' });
  globals.append(el('caption', { className: 'visually-hidden', textContent: 'Globals the pickle names' }));
  globals.append(el('thead', {}, el('tr', {}, el('th', { scope: 'col', textContent: 'Global' }),
    el('th', { scope: 'col', textContent: 'Verdict' }), el('th', { scope: 'col', className: 'num', textContent: 'Uses' }))));
  const body = el('tbody');
  for (const g of details.globals ?? []) {
    body.append(el('tr', { className: `global-row ${g.verdict}` }, el('th', { scope: 'row', textContent: g.name }),
      el('td', { textContent: g.verdict }), el('td', { className: 'num', textContent: formatInteger(g.count) })));
  }
  globals.append(body);
  const allowed = (details.globals ?? []).every((g) => g.verdict === 'allowed');
  const verdict = el('p', { className: 'pickle-verdict', textContent: allowed
    ? 'Every global the pickle names is on the allowlist. Nothing in the file was executed: the pickle was read by a VM that only builds values.'
    : 'The pickle names globals outside the allowlist.' });
  const out = [section('PyTorch checkpoint', definitionList(layout, 'kv')), section('Pickle', el('div', {}, verdict, globals))];
  const values = Object.entries(details.values ?? {});
  if (values.length > 0) {
    const pairs = values.map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]);
    if (details.values_omitted) pairs.push(['…', `${formatInteger(details.values_omitted)} more values`]);
    out.push(section('Other values', metadataList(pairs)));
  }
  return out;
}

function numpySummary(details) {
  const pairs = [];
  if (details.entries !== undefined) pairs.push(['Archive', `${formatInteger(details.entries)} entries, ${formatInteger(details.compressed_entries ?? 0)} compressed`]);
  const arrays = details.arrays ?? (details.descr ? [{ name: 'Array', ...details }] : []);
  for (const a of arrays) {
    pairs.push([a.name, `${a.descr}, NPY ${a.npy_version}${a.fortran_order ? ', Fortran order' : ''}${a.compressed ? ', compressed' : ''}`]);
  }
  return definitionList(pairs, 'kv');
}

function fileList(files) {
  const list = el('ol', { className: 'file-list' });
  for (const f of files) {
    list.append(el('li', {}, el('span', { className: 'file-name', textContent: f.name }),
      el('span', { className: 'muted', textContent: ` ${formatBytes(f.size)}`, title: `${formatInteger(f.size)} bytes` })));
  }
  return section(`Files (${formatInteger(files.length)})`, list);
}

function metadataList(entries) {
  const pairs = entries.map(([key, value]) => {
    const text = String(value);
    if (text.length <= LONG_VALUE) return [key, text];
    const details = el('details', {}, el('summary', { textContent: `${text.slice(0, 80)}… (${formatInteger(text.length)} characters)` }),
      el('pre', { textContent: text }));
    return [key, details];
  });
  return definitionList(pairs, 'kv');
}

// quantize_config.json / quant_config.json: what decoding read (the core prefers it to
// config.json's quantization_config, as GPTQModel does), its keys as they are written.
const QUANTIZER_KEYS = ['quant_method', 'bits', 'w_bit', 'group_size', 'q_group_size', 'sym', 'desc_act',
  'checkpoint_format', 'format', 'version', 'zero_point'];
function quantizerConfigSummary({ file, config }) {
  const pairs = QUANTIZER_KEYS.filter((key) => config[key] !== undefined && config[key] !== null)
    .map((key) => [key, String(config[key])]);
  const wrapper = el('div');
  if (pairs.length > 0) wrapper.append(definitionList(pairs, 'kv'));
  wrapper.append(el('details', {}, el('summary', { textContent: `Full ${file}` }),
    el('pre', { className: 'config-json', textContent: JSON.stringify(config, null, 2) })));
  return wrapper;
}

function configSummary(config) {
  const pairs = [];
  for (const key of CONFIG_KEYS) {
    if (config[key] === undefined || config[key] === null) continue;
    const value = config[key];
    pairs.push([key, Array.isArray(value) ? value.join(', ') : String(value)]);
  }
  const quant = config.quantization_config;
  if (quant && typeof quant === 'object') {
    const bits = quant.bits ?? quant.weight_bits;
    pairs.push(['quantization', [quant.quant_method ?? 'yes', bits ? `${bits}-bit` : ''].filter(Boolean).join(', ')]);
  }
  const wrapper = el('div');
  if (pairs.length > 0) wrapper.append(definitionList(pairs, 'kv'));
  wrapper.append(el('details', {}, el('summary', { textContent: 'Full config.json' }),
    el('pre', { className: 'config-json', textContent: JSON.stringify(config, null, 2) })));
  return wrapper;
}

// A GGUF header (info.details, docs/json-schema.md): version and layout, then every KV
// with its type; arrays (a 150k-token vocabulary) show their first items and a count.
const SHOWN_ITEMS = 6;
function ggufSummary(details) {
  const pairs = [['Version', `v${details.version}, ${details.byte_order}-endian, alignment ${details.alignment}`]];
  if (details.split) pairs.push(['Split', `shard ${details.split.no + 1} of ${details.split.count}`]);
  for (const [key, { type, value }] of Object.entries(details.kv)) pairs.push([key, kvText(type, value)]);
  return definitionList(pairs, 'kv gguf-kv');
}

function kvText(type, value) {
  if (!Array.isArray(value)) return `${type}  ${JSON.stringify(value)}`;
  const shown = value.slice(0, SHOWN_ITEMS).map((v) => (Array.isArray(v) ? `[${formatInteger(v.length)} items]` : JSON.stringify(v)));
  return `${type} × ${formatInteger(value.length)}  ${shown.join(', ')}${value.length > SHOWN_ITEMS ? ', …' : ''}`;
}
