// The page: opening a model (files, folder, drop, URL), its summary and tensor table,
// a tensor's detail view (tensor-view.js), and conversion to safetensors or GGUF with
// progress and cancel. All work happens in the worker (worker.js);
// this file only moves requests and results between it and the DOM.

import { CoreClient } from './core-client.js';
import { entriesFromDrop, filesFromDrop, filesFromFolderInput } from './files.js';
import { formatBytes, formatInteger } from './format.js';
import { renderSummary } from './summary.js';
import { displayTensors } from './tensors.js';
import { TensorTable, rowButton } from './tensor-table.js';
import { TensorView } from './tensor-view.js';
import { ForgetPanel } from './forget.js';
import { ComparePanel } from './compare.js';
import { linkModel, linkTensor, readLink } from './links.js';
import { LayerTree } from './layer-tree.js';

const $ = (id) => document.getElementById(id);

const ui = {
  dropZone: $('drop-zone'),
  fileInput: $('file-input'),
  folderInput: $('folder-input'),
  urlForm: $('url-form'),
  urlInput: $('url-input'),
  activity: $('activity'),
  activityLabel: $('activity-label'),
  activityProgress: $('activity-progress'),
  activityCancel: $('activity-cancel'),
  errorPanel: $('error-panel'),
  errorAction: $('error-action'),
  errorCode: $('error-code'),
  errorMessage: $('error-message'),
  errorOffset: $('error-offset'),
  modelView: $('model-view'),
  summary: $('summary'),
  convertForm: $('convert-form'),
  convertFormat: $('convert-format'),
  convertDtype: $('convert-dtype'),
  convertButton: $('convert-button'),
  convertResult: $('convert-result'),
  castAllLabel: $('cast-all-label'),
  castAll: $('cast-all'),
  saveDirectLabel: $('save-direct-label'),
  saveDirect: $('save-direct'),
};

const core = new CoreClient();
const table = new TensorTable({
  scroll: $('tensor-scroll'),
  table: $('tensor-table'),
  body: $('tensor-body'),
  filterInput: $('tensor-filter'),
  countLabel: $('tensor-count'),
  onOpen: (tensor) => openDetail(tensor),
});
const tree = new LayerTree({
  container: $('tensor-tree'),
  tableBox: $('tensor-scroll'),
  tableButton: $('view-table'),
  treeButton: $('view-tree'),
  filterInput: $('tensor-filter'),
  matches: (tensor) => table.matches(tensor),
  onOpen: (tensor) => openDetail(tensor),
});
const detail = new TensorView({
  dialog: $('tensor-dialog'),
  title: $('tensor-dialog-title'),
  body: $('tensor-detail'),
  closeButton: $('tensor-dialog-close'),
  core,
  busy: () => state.job !== null,
  // The row may have been re-rendered (or filtered away) meanwhile.
  returnFocus: (name) => (tree.shown ? tree.leafButton(name) ?? $('tensor-tree')
    : rowButton($('tensor-body'), name) ?? $('tensor-scroll')).focus(),
});

const forget = new ForgetPanel({
  core,
  startJob: (label, job) => startJob(label, job),
  showProgress: (verb, p) => showProgress(verb, p),
  showError: (action, error) => showError(action, error),
  hideError: () => hideError(),
  offerDownload: (blob, name) => {
    const span = document.createElement('span');
    span.append(...downloadLine(blob, name));
    return span;
  },
  // A sharded model's output: a folder the user picks where the browser can, else a
  // download per file.
  pickFolder: async () => (canSaveFolder && ui.saveDirect.checked
    ? pickHandle(() => window.showDirectoryPicker({ id: 'amn-shards', mode: 'readwrite' })) : undefined),
  offerFiles: (files, shards, index) => {
    const span = document.createElement('span');
    span.append(...shardDownloadLine(files, shards, index));
    return span;
  },
});

const compare = new ComparePanel({
  core,
  startJob: (label, job) => startJob(label, job),
  showProgress: (verb, p, unit) => showProgress(verb, p, unit),
  showError: (action, error) => showError(action, error),
  hideError: () => hideError(),
});

const state = {
  info: null,       // the open model's info JSON
  job: null,        // the running request { promise, cancel }
  downloadUrl: null, // the last conversion's object URL, revoked when replaced
  shardUrls: [],     // the same for a sharded conversion's files
};

const pageTitle = document.title;
const canSaveDirect = typeof window.showSaveFilePicker === 'function';
// A sharded model converts to several files: a folder picker where there is one.
const canSaveFolder = typeof window.showDirectoryPicker === 'function';
ui.saveDirectLabel.hidden = !canSaveDirect;

// ---- activity (one job at a time) ----

function startJob(label, job) {
  state.job?.cancel();
  state.job = job;
  ui.activityLabel.textContent = label;
  ui.activityProgress.removeAttribute('value'); // indeterminate until progress arrives
  ui.activity.hidden = false;
  ui.convertButton.disabled = true;
  forget.setBusy(true);
  compare.setBusy(true);
  return job.promise.finally(() => {
    if (state.job === job) {
      state.job = null;
      ui.activity.hidden = true;
      ui.convertButton.disabled = false;
      forget.setBusy(false);
      compare.setBusy(false);
    }
  });
}

ui.activityCancel.addEventListener('click', () => {
  state.job?.cancel();
  ui.activityLabel.textContent = 'Cancelling…';
});

// `unit` spells the counts (bytes unless said otherwise).
function showProgress(verb, { done, total }, unit = formatBytes) {
  if (ui.activityLabel.textContent === 'Cancelling…') return;
  ui.activityProgress.max = Math.max(total, 1);
  ui.activityProgress.value = done;
  ui.activityLabel.textContent = `${verb}: ${unit(done)} of ${unit(total)}`;
}

// ---- errors ----

function showError(action, error) {
  ui.errorAction.textContent = action;
  ui.errorCode.textContent = error.code;
  ui.errorPanel.dataset.code = error.code;
  ui.errorMessage.textContent = error.message;
  ui.errorOffset.hidden = !(error.offset >= 0);
  ui.errorOffset.textContent = error.offset >= 0 ? `At byte offset ${formatInteger(error.offset)}.` : '';
  ui.errorPanel.hidden = false;
}

function hideError() {
  ui.errorPanel.hidden = true;
  delete ui.errorPanel.dataset.code;
}

// ---- opening ----

// Resolves to whether the model opened.
async function openSource(source, label) {
  detail.close(); // its tensor belongs to the model being replaced
  hideError();
  clearDownload();
  // The URL box and the address bar say where the model comes from: a local file has no URL.
  if (!source.url) ui.urlInput.value = '';
  linkModel(source.url ?? null);
  const job = core.request('open', { source });
  try {
    const info = await startJob(`Opening ${label}…`, job);
    showModel(info);
    return true;
  } catch (error) {
    // Either way the worker has let go of the previous model.
    state.info = null;
    ui.modelView.hidden = true;
    document.title = pageTitle;
    if (error.code !== 'cancelled') showError('open the model', error);
    return false;
  }
}

function openFiles(files) {
  if (files.length === 0) return;
  const label = files.length === 1 ? files[0].name : `${files.length} files`;
  openSource({ files }, label);
}

function openUrl(text) {
  const url = new URL(text.trim(), window.location.href).href;
  ui.urlInput.value = url;
  return openSource({ url }, url.split('/').pop() || url);
}

function openDetail(tensor) {
  detail.open(tensor);
  linkTensor(tensor.name);
}
$('tensor-dialog').addEventListener('close', () => linkTensor(null));

// A shared link: ?url= opens its model, then #tensor= its tensor's detail.
async function followLink() {
  const link = readLink();
  if (!link.url) return;
  if (!await openUrl(link.url) || !link.tensor) return;
  const tensor = displayTensors(state.info).find((t) => t.name === link.tensor);
  if (tensor) openDetail(tensor);
}
followLink();

function showModel(info) {
  state.info = info;
  document.title = `${info.files[0]?.name ?? 'model'} — anamnesis`;
  renderSummary(ui.summary, info);
  ui.convertResult.hidden = true;
  ui.modelView.hidden = false;
  const tensors = displayTensors(info);
  table.setTensors(tensors);
  tree.setTensors(tensors);
  // Only a quantized model has tensors that stay as they are unless asked.
  ui.castAllLabel.hidden = !(info.logical?.length > 0);
  ui.castAll.checked = false;
  forget.show(info);
  compare.show(info);
}

ui.fileInput.addEventListener('change', () => {
  openFiles([...ui.fileInput.files]);
  ui.fileInput.value = '';
});

ui.folderInput.addEventListener('change', () => {
  openFiles(filesFromFolderInput(ui.folderInput.files));
  ui.folderInput.value = '';
});

ui.urlForm.addEventListener('submit', (event) => {
  event.preventDefault();
  openUrl(ui.urlInput.value);
});

// The whole window accepts drops, so a near miss never navigates away from the page.
let dragDepth = 0;
window.addEventListener('dragenter', (event) => {
  if (!event.dataTransfer?.types.includes('Files')) return;
  dragDepth += 1;
  ui.dropZone.classList.add('dragging');
});
window.addEventListener('dragleave', () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (dragDepth === 0) ui.dropZone.classList.remove('dragging');
});
window.addEventListener('dragover', (event) => {
  event.preventDefault();
  if (event.dataTransfer) event.dataTransfer.dropEffect = 'copy';
});
window.addEventListener('drop', async (event) => {
  event.preventDefault();
  dragDepth = 0;
  ui.dropZone.classList.remove('dragging');
  if (!event.dataTransfer) return;
  const dropped = entriesFromDrop(event.dataTransfer);
  try {
    openFiles(await filesFromDrop(dropped));
  } catch (err) {
    showError('read the dropped files', { code: 'io', message: String(err?.message ?? err), offset: -1 });
  }
});

// ---- converting ----

// <stem>-<dtype|converted>.<format>, as the CLIs name it: the core's names, computed by
// the worker when the model opened (worker.js).
function outputName(info, format, dtype) {
  return info.outputNames[`${format}:${dtype}`];
}

function clearDownload() {
  if (state.downloadUrl) URL.revokeObjectURL(state.downloadUrl);
  state.downloadUrl = null;
  for (const url of state.shardUrls) URL.revokeObjectURL(url);
  state.shardUrls = [];
  ui.convertResult.hidden = true;
  ui.convertResult.replaceChildren();
}

ui.convertForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  if (!state.info) return;
  const format = ui.convertFormat.value;
  const dtype = ui.convertDtype.value;
  // A folder of shards where the CLIs would write one (a sharded model to safetensors):
  // the core's answer, asked by the worker when the model opened.
  if (state.info.outputFolders[`${format}:${dtype}`]) {
    await convertShards(dtype);
    return;
  }
  const name = outputName(state.info, format, dtype);
  let fileHandle;
  if (canSaveDirect && ui.saveDirect.checked) {
    fileHandle = await pickHandle(() => window.showSaveFilePicker({
      suggestedName: name,
      types: [{ description: format === 'gguf' ? 'GGUF' : 'safetensors', accept: { 'application/octet-stream': [`.${format}`] } }],
    }));
    if (!fileHandle) return;
  }
  hideError();
  clearDownload();
  const verb = format === 'gguf'
    ? `Converting to GGUF${dtype === 'keep' ? '' : ` (${dtype.toUpperCase()})`}`
    : `Converting to ${dtype === 'keep' ? 'safetensors' : dtype.toUpperCase()}`;
  const job = core.request('convert', { to: format, dtype: dtype === 'keep' ? '' : dtype, castAll: ui.castAll.checked, fileHandle },
    { onProgress: (p) => showProgress(verb, p) });
  try {
    const result = await startJob(`${verb}…`, job);
    if (result.blob) {
      offerDownload(result.blob, name);
    } else {
      showConvertResult(`Saved ${fileHandle.name}.`);
    }
  } catch (error) {
    if (error.code === 'cancelled') showConvertResult('Conversion cancelled; nothing was written.');
    else showError('convert the model', error);
  }
});

// A File System Access picker, opened before anything else (it needs the click's user
// activation). Null when the user closed it, or when it failed (the error is shown).
async function pickHandle(open) {
  try {
    return await open();
  } catch (err) {
    if (err?.name !== 'AbortError') {
      showError('convert the model', { code: 'io', message: String(err?.message ?? err), offset: -1 });
    }
    return null;
  }
}

function showConvertResult(text, ...extra) {
  ui.convertResult.replaceChildren(text, ...extra);
  ui.convertResult.hidden = false;
}

function offerDownload(blob, name) {
  showConvertResult(...downloadLine(blob, name));
}

// "<name> (<size>) is ready. Download again": the download starts now; the link repeats it.
function downloadLine(blob, name) {
  if (state.downloadUrl) URL.revokeObjectURL(state.downloadUrl);
  state.downloadUrl = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = state.downloadUrl;
  link.download = name;
  link.textContent = 'Download again';
  link.click();
  return [`${name} (${formatBytes(blob.size)}) is ready. `, link];
}

// ---- converting a sharded model: every shard and the index ----

async function convertShards(dtype) {
  let dirHandle;
  if (canSaveFolder && ui.saveDirect.checked) {
    dirHandle = await pickHandle(() => window.showDirectoryPicker({ id: 'amn-shards', mode: 'readwrite' }));
    if (!dirHandle) return;
  }
  hideError();
  clearDownload();
  const verb = `Converting the shards to ${dtype === 'keep' ? 'safetensors' : dtype.toUpperCase()}`;
  const job = core.request('convertShards', { dtype: dtype === 'keep' ? '' : dtype, castAll: ui.castAll.checked, dirHandle },
    { onProgress: (p) => showProgress(verb, p) });
  try {
    const result = await startJob(`${verb}…`, job);
    if (result.saved) {
      showConvertResult(`Saved ${result.shards} shard${result.shards === 1 ? '' : 's'}`
        + `${result.index ? ' and the index' : ''} to ${result.folder}.`);
    } else {
      offerShardDownloads(result.files, result.shards, result.index);
    }
  } catch (error) {
    if (error.code === 'cancelled') showConvertResult('Conversion cancelled; nothing was written.');
    else showError('convert the model', error);
  }
}

function offerShardDownloads(files, shards, index) {
  showConvertResult(...shardDownloadLine(files, shards, index));
}

// One download per file (the browser may ask once to allow several), and a link each.
// `index`: the index's file name (the core's), said as "the index".
function shardDownloadLine(files, shards, index) {
  const links = files.map(({ name, blob }) => {
    const url = URL.createObjectURL(blob);
    state.shardUrls.push(url);
    const link = document.createElement('a');
    link.href = url;
    link.download = name;
    link.textContent = name;
    return link;
  });
  const list = document.createElement('span');
  links.forEach((link, i) => list.append(i ? ', ' : '', link));
  const total = files.reduce((n, f) => n + f.blob.size, 0);
  const rest = files.slice(shards).map((f) => (f.name === index ? 'the index' : f.name)).join(' and ');
  const what = `${shards} shard${shards === 1 ? '' : 's'}${rest ? ` and ${rest}` : ''}`;
  for (const link of links) link.click();
  return [`${what} (${formatBytes(total)}) are ready: `, list];
}
