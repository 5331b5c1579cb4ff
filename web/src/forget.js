// The Forget panel: quantize the open model as a producer would (the schemes and their
// rules are the core's: the worker sends the list), stream it to a download, then show
// what was lost per tensor (the Lethe distance), sortable.

import { formatBytes } from './format.js';
import { fixed, metricRow, sci } from './metric-rows.js';

// A text box's names, split at spaces and commas ("*.mlp.* lm_head" -> two names).
const names = (input) => input.value.split(/[\s,]+/).filter(Boolean);

const $ = (id) => document.getElementById(id);

export class ForgetPanel {
  // page: { core, startJob, showProgress, showError, hideError, offerDownload, pickFolder, offerFiles }
  constructor(page) {
    this.page = page;
    this.ui = {
      form: $('forget-form'), scheme: $('forget-scheme'), fourBit: $('forget-4bit'),
      blocksize: $('forget-blocksize'), doubleQuant: $('forget-double-quant'), torchThreads: $('forget-torch-threads'),
      skip: $('forget-skip'),
      mlx: $('forget-mlx'), mode: $('forget-mode'), affine: $('forget-affine'), bits: $('forget-bits'),
      groupSize: $('forget-group-size'),
      gguf: $('forget-gguf'), imatrix: $('forget-imatrix'), requantize: $('forget-requantize'), tensorTypes: $('forget-tensor-types'),
      tensorTypeFile: $('forget-tensor-type-file'), pruneLayers: $('forget-prune-layers'),
      keepSplit: $('forget-keep-split'), keepSplitLabel: $('forget-keep-split-label'),
      includeWeights: $('forget-include-weights'), excludeWeights: $('forget-exclude-weights'),
      like: $('forget-like'), likeFiles: $('forget-like-files'), reuseScales: $('forget-reuse-scales'),
      likeInfo: $('forget-like-info'),
      button: $('forget-button'), result: $('forget-result'), lethe: $('lethe'),
      summary: $('lethe-summary'), body: $('lethe-body'), table: $('lethe-table'),
    };
    this.rows = [];
    this.sort = { key: 'name', dir: 1 };
    this.ui.scheme.addEventListener('change', () => this.#showSettings());
    this.ui.mode.addEventListener('change', () => this.#showSettings());
    this.ui.likeFiles.addEventListener('change', () => this.#openReference([...this.ui.likeFiles.files]));
    this.ui.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.run();
    });
    for (const th of this.ui.table.querySelectorAll('th')) {
      th.querySelector('button').addEventListener('click', () => this.#sortBy(th.dataset.letheKey));
    }
  }

  // A model opened: the core's schemes (only the built ones are offered) and names.
  show(info) {
    this.info = info;
    const { scheme } = this.ui;
    if (scheme.options.length === 0) {
      // A GGUF row's value is "gguf:<type>" (its name is a ggml type, its target GGUF).
      for (const s of info.forgetSchemes.filter((row) => row.available)) {
        const option = new Option(`${s.name} — ${s.producer}`, s.to ? `${s.to}:${s.name}` : s.name);
        scheme.add(option);
      }
      // --like REF: the scheme, its settings and the quantized set from a reference model.
      scheme.add(new Option('like a reference model…', 'like'));
    }
    // The worker closed the reference with the model it belonged to.
    this.reference = null;
    this.ui.likeFiles.value = '';
    this.ui.likeInfo.textContent = '';
    this.ui.result.hidden = true;
    this.ui.lethe.hidden = true;
    this.#showSettings();
  }

  setBusy(busy) { this.ui.button.disabled = busy; }

  #showSettings() {
    const s = this.ui.scheme.value;
    this.ui.fourBit.hidden = !(s === 'nf4' || s === 'fp4');
    this.ui.mlx.hidden = s !== 'mlx';
    // MLX's floating-point modes take only their own bits and group size (the core says so).
    this.ui.affine.hidden = this.ui.mode.value !== 'affine';
    this.ui.gguf.hidden = !s.startsWith('gguf:');
    // --keep-split only splits a split input (the core's layout says whether it is one).
    this.ui.keepSplitLabel.hidden = !this.info?.outputFolders.keepSplit;
    this.ui.like.hidden = s !== 'like';
  }

  // The worker opens the reference and keeps it open (it is read again at plan time for
  // its scales); what it holds is shown, so the user sees what the output will follow.
  async #openReference(files) {
    const { page, ui } = this;
    this.reference = null;
    ui.likeInfo.textContent = '';
    if (files.length === 0) return;
    page.hideError();
    const label = files.length === 1 ? files[0].name : `${files.length} files`;
    try {
      const r = await page.startJob(`Opening the reference ${label}…`, page.core.request('openReference', { files }));
      this.reference = { ...r, label };
      ui.likeInfo.textContent = `follows ${label}: ${r.format}, ${r.kinds.length ? r.kinds.join(', ') : 'nothing quantized'}`;
    } catch (error) {
      ui.likeFiles.value = '';
      if (error.code !== 'cancelled') page.showError('open the reference model', error);
    }
  }

  async run() {
    const { page, ui } = this;
    if (!this.info) return;
    const value = ui.scheme.value;
    if (value === 'like') {
      await this.#runLike();
      return;
    }
    const gguf = value.startsWith('gguf:');
    const scheme = gguf ? value.slice(5) : value;
    const fourBit = scheme === 'nf4' || scheme === 'fp4';
    const affine = scheme === 'mlx' && ui.mode.value === 'affine';
    // A ggml type's row is written pure (llama-quantize --pure); a file type's row is its mix.
    const row = this.info.forgetSchemes.find((r) => (r.to ? `${r.to}:${r.name}` : r.name) === value);
    const request = {
      scheme,
      to: gguf ? 'gguf' : undefined,
      pure: row?.pure ?? false,
      blocksize: fourBit ? Number(ui.blocksize.value) : undefined,
      doubleQuant: fourBit && ui.doubleQuant.checked,
      // Only with double quantization, where it changes the offset (the core refuses it otherwise).
      torchThreads: fourBit && ui.doubleQuant.checked ? Number(ui.torchThreads.value) : undefined,
      mode: scheme === 'mlx' ? ui.mode.value : undefined,
      bits: affine ? Number(ui.bits.value) : undefined,
      groupSize: affine ? Number(ui.groupSize.value) : undefined,
      skip: names(ui.skip),
      // llama-quantize's --imatrix (a File: the worker reads it, the output records its name),
      // --include-weights / --exclude-weights and --allow-requantize.
      imatrix: gguf ? ui.imatrix.files[0] : undefined,
      includeWeights: gguf ? names(ui.includeWeights) : [],
      excludeWeights: gguf ? names(ui.excludeWeights) : [],
      allowRequantize: gguf && ui.requantize.checked,
      // llama-quantize's --tensor-type: split at spaces only (a regular expression may hold commas).
      tensorType: gguf ? ui.tensorTypes.value.split(/\s+/).filter(Boolean) : [],
      // --tensor-type-file (a File: the core reads its entries, after the field's).
      tensorTypeFile: gguf ? ui.tensorTypeFile.files[0] : undefined,
      // llama-quantize's --prune-layers ("30,31": the core checks the list) and --keep-split.
      pruneLayers: gguf && ui.pruneLayers.value.trim() ? ui.pruneLayers.value.trim() : undefined,
      keepSplit: gguf && !ui.keepSplitLabel.hidden && ui.keepSplit.checked,
    };
    // A sharded model gives several files (the core's rule): into a folder, as convert's shards.
    const folder = request.keepSplit ? this.info.outputFolders.keepSplit : this.info.outputFolders[`forget:${value}`];
    await this.#forget(request, `Quantizing to ${scheme}`, folder, this.info.outputNames[`forget:${value}`]);
  }

  // --like REF [--reuse-scales]: the worker passes its open reference and what forgetting
  // like it writes (the core's likeFormat: `to`, the output's name and layout).
  async #runLike() {
    const { page, ui } = this;
    const r = this.reference;
    if (!r) {
      page.showError('quantize the model', { code: 'invalid_argument', message: 'Choose the reference model first: its files, next to "reference".' });
      return;
    }
    const request = { like: true, to: r.to, reuseScales: ui.reuseScales.checked, skip: names(ui.skip) };
    await this.#forget(request, `Quantizing like ${r.label}`, r.sharded, r.outputName);
  }

  async #forget(request, verb, sharded, name) {
    const { page, ui } = this;
    page.hideError();
    ui.result.hidden = true;
    ui.lethe.hidden = true;
    if (sharded) {
      request.dirHandle = await page.pickFolder();
      if (request.dirHandle === null) return;  // the picker was closed
    }
    const job = page.core.request(sharded ? 'forgetShards' : 'forget', request, { onProgress: (p) => page.showProgress(verb, p) });
    try {
      const result = await page.startJob(`${verb}…`, job);
      if (result.saved) {
        ui.result.replaceChildren(`Saved ${result.saved.length} files to ${result.folder}.`);
      } else {
        ui.result.replaceChildren(sharded ? page.offerFiles(result.files, result.shards, result.index) : page.offerDownload(result.blob, name));
      }
      ui.result.hidden = false;
      this.#showLethe(result.lethe);
    } catch (error) {
      if (error.code === 'cancelled') {
        ui.result.textContent = 'Quantization cancelled; nothing was written.';
        ui.result.hidden = false;
      } else {
        page.showError('quantize the model', error);
      }
    }
  }

  #showLethe(lethe) {
    const m = lethe.model;
    this.ui.summary.textContent = `${lethe.scheme}: ${m.quantized} of ${lethe.tensors.length} tensors quantized, `
      + `${formatBytes(m.bytes_before)} → ${formatBytes(m.bytes_after)}; SNR ${fixed(m.snr_db, 2)} dB, cosine ${fixed(m.cosine, 6)}.`
      + (lethe.warnings.length ? ` ${lethe.warnings.join(' ')}` : '');
    this.rows = lethe.tensors.filter((t) => t.quantized);
    this.#render();
    this.ui.lethe.hidden = false;
  }

  #sortBy(key) {
    this.sort = this.sort.key === key ? { key, dir: -this.sort.dir } : { key, dir: 1 };
    this.#render();
  }

  #render() {
    const { key, dir } = this.sort;
    const value = (t) => (t[key] === null ? Infinity : t[key]);
    const rows = [...this.rows].sort((a, b) => {
      const x = value(a); const y = value(b);
      return (typeof x === 'string' ? x.localeCompare(y, 'en', { numeric: true }) : x - y) * dir;
    });
    for (const th of this.ui.table.querySelectorAll('th')) {
      th.setAttribute('aria-sort', th.dataset.letheKey !== key ? 'none' : dir > 0 ? 'ascending' : 'descending');
    }
    this.ui.body.replaceChildren(...rows.map((t) => metricRow(t.name, [t.name,
      `${fixed(t.bits_before, 2)} → ${fixed(t.bits_after, 2)}`, sci(t.mae), sci(t.rmse), sci(t.max_abs_error),
      fixed(t.snr_db, 2), fixed(t.cosine, 6)], 1)));
  }
}
