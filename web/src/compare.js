// The Compare panel: the open model (A) against a second one (B), files or a URL. The
// worker opens B, runs the core's diff (both read piece by piece) and closes B again;
// this shows the per-tensor table, in the core's order and with its statuses.

import { fixed, metricRow, sci } from './metric-rows.js';

const $ = (id) => document.getElementById(id);

// SNR is null when infinite: +∞ when nothing differs, −∞ when A is all zeros (something
// differs); and when nothing was compared (no max |Δ| either).
function snr(t) {
  if (t.snr_db !== null || t.max_abs_diff === 0) return fixed(t.snr_db, 2);
  return t.max_abs_diff === null ? '–' : '−∞';
}

export class ComparePanel {
  // page: { core, startJob, showProgress, showError, hideError }
  constructor(page) {
    this.page = page;
    this.ui = {
      files: $('compare-files'), form: $('compare-form'), url: $('compare-url'), button: $('compare-button'),
      result: $('compare'), summary: $('compare-summary'), body: $('compare-body'),
    };
    this.ui.files.addEventListener('change', () => {
      const files = [...this.ui.files.files];
      this.ui.files.value = '';
      if (files.length) this.run({ files }, files.length === 1 ? files[0].name : `${files.length} files`);
    });
    this.ui.form.addEventListener('submit', (event) => {
      event.preventDefault();
      const url = new URL(this.ui.url.value.trim(), window.location.href).href;
      this.run({ url }, url.split('/').pop() || url);
    });
  }

  // A model opened: an earlier comparison belonged to the model before.
  show(info) {
    this.info = info;
    this.ui.result.hidden = true;
  }

  setBusy(busy) { this.ui.button.disabled = busy; }

  async run(source, label) {
    const { page, ui } = this;
    if (!this.info) return;
    page.hideError();
    ui.result.hidden = true;
    const verb = `Comparing with ${label}`;
    const job = page.core.request('compare', { source }, {
      onProgress: (p) => page.showProgress(verb, p, (n) => `${n} pieces`),
    });
    try {
      this.#show(await page.startJob(`${verb}…`, job), label);
    } catch (error) {
      if (error.code !== 'cancelled') page.showError('compare the models', error);
    }
  }

  #show(diff, label) {
    const counts = {};
    for (const t of diff.tensors) counts[t.status] = (counts[t.status] ?? 0) + 1;
    const parts = Object.entries(counts).map(([status, n]) => `${n} ${status.replaceAll('_', ' ')}`);
    this.ui.summary.textContent = `A: this model, B: ${label}. ${diff.tensors.length} tensors: ${parts.join(', ')}. `
      + (diff.identical ? 'The models are identical.' : 'The models differ.');
    this.ui.result.dataset.identical = String(diff.identical);
    this.ui.body.replaceChildren(...diff.tensors.map((t) => {
      const side = (dtype, shape) => (dtype === null ? '–' : t.status === 'shape_mismatch' ? `${dtype} [${shape.join(', ')}]` : dtype);
      const cosine = t.cosine === null ? '–' : fixed(t.cosine, 6);
      // A tensor matched through llama.cpp's GGUF <-> Hugging Face names shows both (as the CLI).
      const name = t.name_b ? `${t.name} = ${t.name_b}` : t.name;
      const tr = metricRow(t.name, [name, t.status.replaceAll('_', ' '), side(t.dtype_a, t.shape_a), side(t.dtype_b, t.shape_b),
        sci(t.max_abs_diff), sci(t.mae), sci(t.rmse), cosine, snr(t)], 4);
      tr.dataset.status = t.status;
      return tr;
    }));
    this.ui.result.hidden = false;
  }
}
