// The page's Forget panel in Debian's chromium: the core's schemes offered, a quantized
// download whose tensors are bitsandbytes' own bytes (fixtures/lethe/bnb) or ggml's blocks
// (fixtures/ggml_quant, GGUF), and the Lethe table per tensor, sortable.
//   node --test tests_js/browser/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, tempDir } from '../support/helpers.js';
import { parseSafetensors, settled, startHarness } from './harness.js';

let harness;
before(async () => { harness = await startHarness(); });
after(async () => { await harness?.close(); });

test('forget to nf4 with double quantization: bitsandbytes\' bytes, and what was lost', { timeout: 90_000 }, async (t) => {
  const input = join(FIXTURES, 'lethe/bnb/nf4_dq.input.safetensors');
  const want = parseSafetensors(new Uint8Array(await readFile(join(FIXTURES, 'lethe/bnb/nf4_dq.safetensors'))));
  const dir = await tempDir(t, 'amn-web-forget-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', [{ name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: await readFile(input) }]);
    assert.equal(await settled(page), 'model');
    const offered = await page.$$eval('#forget-scheme option', (os) => os.map((o) => o.value));
    assert.ok(offered.includes('nf4') && offered.includes('int8') && offered.includes('fp8-block') && offered.includes('nvfp4'), offered.join());
    assert.ok(offered.includes('mlx'), 'mlx is offered');
    await page.selectOption('#forget-scheme', 'mlx');
    assert.ok(await page.isVisible('#forget-bits') && await page.isVisible('#forget-group-size'), 'mlx shows bits and group size');
    assert.ok(!(await page.isVisible('#forget-blocksize')));
    assert.ok(offered.includes('gguf:Q4_K'), 'the GGUF types are offered');
    await page.selectOption('#forget-scheme', 'nf4');
    assert.ok(await page.isVisible('#forget-blocksize'));
    assert.ok(!(await page.isVisible('#forget-bits')), 'the mlx options show for mlx only');
    await page.setChecked('#forget-double-quant', true);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#forget-button')]);
    assert.equal(download.suggestedFilename(), 'model-nf4.safetensors');
    const path = join(dir, download.suggestedFilename());
    await download.saveAs(path);
    const got = parseSafetensors(new Uint8Array(await readFile(path)));
    const names = Object.keys(want.header).filter((n) => n !== '__metadata__');
    assert.equal(Object.keys(got.header).filter((n) => n !== '__metadata__').length, names.length);
    for (const n of names) {
      const a = got.header[n]; const b = want.header[n];
      assert.ok(a, `${n} written`);
      assert.equal(a.dtype, b.dtype, n);
      assert.ok(Buffer.from(got.data.subarray(...a.data_offsets)).equals(Buffer.from(want.data.subarray(...b.data_offsets))),
        `${n}: bitsandbytes' bytes`);
    }
    // The Lethe table: one row per quantized weight; sorting by SNR orders the rows.
    await page.waitForSelector('#lethe:not([hidden])');
    const rows = () => page.$$eval('#lethe-body tr', (trs) => trs.map((tr) => ({
      name: tr.dataset.name, snr: Number(tr.children[5].textContent), cosine: Number(tr.children[6].textContent),
    })));
    const before = await rows();
    assert.equal(before.length, 5);
    for (const r of before) assert.ok(r.cosine > 0.98 && r.cosine <= 1 && r.snr > 10, JSON.stringify(r));
    await page.click('#lethe-table th[data-lethe-key="snr_db"] button');
    const sorted = (await rows()).map((r) => r.snr);
    assert.deepEqual(sorted, [...sorted].sort((a, b) => a - b));
    assert.equal(await page.getAttribute('#lethe-table th[data-lethe-key="snr_db"]', 'aria-sort'), 'ascending');
    assert.match(await page.textContent('#lethe-summary'), /5 of 5 tensors quantized/);
  });
});

test('forget to mlx mxfp4 in the page: the mode hides bits and group size, MLX\'s own bytes', { timeout: 90_000 }, async (t) => {
  const input = join(FIXTURES, 'lethe/mlx_fp/modes_bf16.input.safetensors');
  const want = parseSafetensors(new Uint8Array(await readFile(join(FIXTURES, 'quantized/mlx/modes_bf16/model.safetensors'))));
  const dir = await tempDir(t, 'amn-web-forget-mlx-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', [{ name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: await readFile(input) }]);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'mlx');
    assert.ok(await page.isVisible('#forget-mode') && await page.isVisible('#forget-bits'), 'affine shows bits and group size');
    await page.selectOption('#forget-mode', 'mxfp4');
    assert.ok(!(await page.isVisible('#forget-bits')) && !(await page.isVisible('#forget-group-size')), 'mxfp4 has its own');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#forget-button')]);
    const path = join(dir, download.suggestedFilename());
    await download.saveAs(path);
    const got = parseSafetensors(new Uint8Array(await readFile(path)));
    for (const n of ['model.layers.0.self_attn.q_proj.weight', 'model.layers.0.self_attn.q_proj.scales']) {
      const a = got.header[n]; const b = want.header[n];
      assert.ok(a, `${n} written`);
      assert.ok(Buffer.from(got.data.subarray(...a.data_offsets)).equals(Buffer.from(want.data.subarray(...b.data_offsets))),
        `${n}: MLX's bytes`);
    }
  });
});

test('forget to GGUF Q4_K in the page: a .gguf download holding ggml\'s blocks', { timeout: 90_000 }, async (t) => {
  const { ggufForgetInput, ggmlBlocks } = await import('../support/gguf_input.js');
  const dir = await tempDir(t, 'amn-web-forget-gguf-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', [{ name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: ggufForgetInput() }]);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'gguf:Q4_K');
    assert.ok(!(await page.isVisible('#forget-blocksize')), 'no 4-bit settings for a GGUF type');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#forget-button')]);
    assert.equal(download.suggestedFilename(), 'model-q4_k.gguf');
    const path = join(dir, download.suggestedFilename());
    await download.saveAs(path);
    const bytes = await readFile(path);
    assert.equal(bytes.subarray(0, 4).toString('latin1'), 'GGUF');
    assert.ok(bytes.indexOf(ggmlBlocks('Q4_K')) > 0, 'ggml\'s Q4_K blocks');
    await page.waitForSelector('#lethe:not([hidden])');
    assert.match(await page.textContent('#lethe-summary'), /1 of 2 tensors quantized/);
  });
});

test('forget to GGUF Q4_K_M with an importance matrix in the page: llama-quantize --imatrix\'s tensors', { timeout: 90_000 }, async (t) => {
  const { ggufTensors } = await import('../support/gguf_input.js');
  const { loadPackage } = await import('../support/helpers.js');
  const amn = await loadPackage();
  const fixtures = join(FIXTURES, 'gguf_ftype');
  const dir = await tempDir(t, 'amn-web-forget-imatrix-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', [{
      name: 'tiny_llama_f16.gguf', mimeType: 'application/octet-stream', buffer: await readFile(join(fixtures, 'tiny_llama_f16.gguf')),
    }]);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'nf4');
    assert.ok(!(await page.isVisible('#forget-imatrix')), 'the importance matrix is for GGUF targets only');
    await page.selectOption('#forget-scheme', 'gguf:Q4_K_M');
    assert.ok(await page.isVisible('#forget-imatrix'));
    await page.setInputFiles('#forget-imatrix', [{
      name: 'tiny.imatrix.gguf', mimeType: 'application/octet-stream', buffer: await readFile(join(fixtures, 'tiny.imatrix.gguf')),
    }]);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#forget-button')]);
    const path = join(dir, download.suggestedFilename());
    await download.saveAs(path);
    const got = await readFile(path);
    const want = await readFile(join(fixtures, 'tiny-imatrix-Q4_K_M.gguf'));
    assert.deepEqual(await ggufTensors(amn, got), await ggufTensors(amn, want));
    // The KV llama-quantize writes, naming the File.
    const m = await amn.open(new Uint8Array(got));
    try {
      assert.deepEqual(m.info.details.kv['quantize.imatrix.file'], { type: 'STRING', value: 'tiny.imatrix.gguf' });
    } finally {
      await m.close();
    }
    // "matrix not for": llama-quantize --exclude-weights attn_v --exclude-weights blk.1.
    await page.fill('#forget-exclude-weights', 'attn_v, blk.1.');
    const [again] = await Promise.all([page.waitForEvent('download'), page.click('#forget-button')]);
    const excluded = join(dir, `exclude-${again.suggestedFilename()}`);
    await again.saveAs(excluded);
    assert.deepEqual(await ggufTensors(amn, await readFile(excluded)),
      await ggufTensors(amn, await readFile(join(fixtures, 'tiny-imatrix-exclude-Q4_K_M.gguf'))));
  });
});

test('forget like a reference in the page: a GGUF reference gives llama-quantize\'s tensors; a bitsandbytes one, with its scales, its own bytes back', { timeout: 120_000 }, async (t) => {
  const { ggufTensors } = await import('../support/gguf_input.js');
  const { loadPackage } = await import('../support/helpers.js');
  const amn = await loadPackage();
  const fixtures = join(FIXTURES, 'gguf_ftype');
  const dir = await tempDir(t, 'amn-web-forget-like-');
  const file = async (name, path) => ({ name, mimeType: 'application/octet-stream', buffer: await readFile(path) });
  const download = async (page) => {
    const [d] = await Promise.all([page.waitForEvent('download'), page.click('#forget-button')]);
    const path = join(dir, d.suggestedFilename());
    await d.saveAs(path);
    return { name: d.suggestedFilename(), bytes: await readFile(path) };
  };
  await harness.withPage(t, async (page) => {
    // The F16 model like llama-quantize's Q4_K_M of it: each tensor gets its type there.
    await page.setInputFiles('#file-input', [await file('tiny_llama_f16.gguf', join(fixtures, 'tiny_llama_f16.gguf'))]);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'like');
    assert.ok(await page.isVisible('#forget-like-files') && !(await page.isVisible('#forget-imatrix')), 'the reference, not the GGUF options');
    await page.click('#forget-button');
    assert.equal(await page.getAttribute('#error-panel', 'data-code'), 'invalid_argument', 'no reference chosen yet');
    await page.setInputFiles('#forget-like-files', [await file('tiny-Q4_K_M.gguf', join(fixtures, 'tiny-Q4_K_M.gguf'))]);
    await page.waitForFunction(() => document.getElementById('forget-like-info').textContent !== '');
    assert.match(await page.textContent('#forget-like-info'), /follows tiny-Q4_K_M\.gguf: gguf, .*Q4_K/);
    const gguf = await download(page);
    assert.equal(gguf.name, 'tiny_llama_f16-like.gguf');
    assert.deepEqual(await ggufTensors(amn, gguf.bytes), await ggufTensors(amn, await readFile(join(fixtures, 'tiny-Q4_K_M.gguf'))));

    // remember(REF) forgotten like REF with its scales is REF: bitsandbytes' NF4 with double quant.
    const refPath = join(FIXTURES, 'lethe/bnb/nf4_dq.safetensors');
    const ref = await amn.open(refPath);
    let back;
    try {
      back = Buffer.from(await ref.convert({ dtype: 'f32' }));
    } finally {
      await ref.close();
    }
    await page.setInputFiles('#file-input', [{ name: 'back.safetensors', mimeType: 'application/octet-stream', buffer: back }]);
    assert.equal(await settled(page), 'model');
    assert.equal(await page.textContent('#forget-like-info'), '', 'a new model forgets the old reference');
    await page.selectOption('#forget-scheme', 'like');
    await page.setInputFiles('#forget-like-files', [await file('nf4_dq.safetensors', refPath)]);
    await page.waitForFunction(() => document.getElementById('forget-like-info').textContent !== '');
    assert.match(await page.textContent('#forget-like-info'), /safetensors, bnb-nf4/);
    await page.setChecked('#forget-reuse-scales', true);
    const st = await download(page);
    assert.equal(st.name, 'back-like.safetensors');
    const got = parseSafetensors(new Uint8Array(st.bytes));
    const want = parseSafetensors(new Uint8Array(await readFile(refPath)));
    const names = Object.keys(want.header).filter((n) => n !== '__metadata__');
    for (const n of names) {
      const a = got.header[n]; const b = want.header[n];
      assert.ok(a, `${n} written`);
      assert.ok(Buffer.from(got.data.subarray(...a.data_offsets)).equals(Buffer.from(want.data.subarray(...b.data_offsets))), `${n}: the reference's bytes`);
    }
    await page.waitForSelector('#lethe:not([hidden])');
    assert.match(await page.textContent('#lethe-summary'), /5 of 5 tensors quantized/);
  });
});

test('forget to GGUF Q4_K_M with tensor types and a tensor types file in the page: llama-quantize --tensor-type\'s tensors', { timeout: 90_000 }, async (t) => {
  const { ggufTensors } = await import('../support/gguf_input.js');
  const { loadPackage } = await import('../support/helpers.js');
  const amn = await loadPackage();
  const fixtures = join(FIXTURES, 'gguf_ftype');
  const dir = await tempDir(t, 'amn-web-forget-tensor-type-');
  await harness.withPage(t, async (page) => {
    await page.setInputFiles('#file-input', [{
      name: 'tiny_llama_f16.gguf', mimeType: 'application/octet-stream', buffer: await readFile(join(fixtures, 'tiny_llama_f16.gguf')),
    }]);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'gguf:Q4_K_M');
    // fixtures/gguf_ftype/README.md: the options llama-quantize was given, the last three
    // from a --tensor-type-file (its entries come after the field's).
    await page.fill('#forget-tensor-types', 'blk\\.0\\.attn_v=q8_0 ffn_(up|gate)=q5_0');
    await page.setInputFiles('#forget-tensor-type-file', [{
      name: 'types.txt', mimeType: 'text/plain', buffer: Buffer.from('blk\\.1\\.ffn_up=q8_0\n  BLK\\.2\\.ATTN_Q=iq4_nl\nattn_output=q4_k\n'),
    }]);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#forget-button')]);
    const path = join(dir, download.suggestedFilename());
    await download.saveAs(path);
    const want = await readFile(join(fixtures, 'tiny-Q4_K_M-tensor_type.gguf'));
    assert.deepEqual(await ggufTensors(amn, await readFile(path)), await ggufTensors(amn, want));
  });
});

test('forget to GGUF in the page with prune layers and keep split: llama-quantize --prune-layers / --keep-split', { timeout: 90_000 }, async (t) => {
  const { ggufTensors } = await import('../support/gguf_input.js');
  const { loadPackage } = await import('../support/helpers.js');
  const amn = await loadPackage();
  const fixtures = join(FIXTURES, 'gguf_ftype');
  const dir = await tempDir(t, 'amn-web-forget-prune-');
  const file = async (name) => ({ name, mimeType: 'application/octet-stream', buffer: await readFile(join(fixtures, name)) });
  await harness.withPage(t, async (page) => {
    // One file: no split to keep (the box is hidden); layer 1 pruned, layer 2 renumbered.
    await page.setInputFiles('#file-input', [await file('tiny_llama_f16.gguf')]);
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'gguf:Q4_K_M');
    assert.equal(await page.isVisible('#forget-keep-split'), false);
    await page.fill('#forget-prune-layers', '1');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#forget-button')]);
    const path = join(dir, download.suggestedFilename());
    await download.saveAs(path);
    const got = await ggufTensors(amn, await readFile(path));
    const unpruned = await ggufTensors(amn, await readFile(join(fixtures, 'tiny-Q4_K_M.gguf')));
    assert.equal(Object.keys(got).length, 21);
    assert.deepEqual(got['blk.1.ffn_up.weight'], unpruned['blk.2.ffn_up.weight']);
  });
  await harness.withPage(t, async (page) => {
    // A split input: one download per input file, llama-quantize --keep-split's tensors.
    const names = [1, 2, 3].map((k) => `tiny-tied-split-0000${k}-of-00003.gguf`);
    await page.setInputFiles('#file-input', await Promise.all(names.map(file)));
    assert.equal(await settled(page), 'model');
    await page.selectOption('#forget-scheme', 'gguf:Q4_K_M');
    await page.check('#forget-keep-split');
    const downloads = [];
    page.on('download', (d) => downloads.push(d));
    await page.click('#forget-button');
    await page.waitForSelector('#forget-result:not([hidden])');
    for (let i = 0; i < 50 && downloads.length < 3; i++) await page.waitForTimeout(100);
    const byName = Object.fromEntries(downloads.map((d) => [d.suggestedFilename(), d]));
    const saved = Object.keys(byName).sort();
    assert.equal(saved.length, 3, saved.join(', '));
    for (const [k, name] of saved.entries()) {
      assert.match(name, new RegExp(`-0000${k + 1}-of-00003\\.gguf$`));
      const path = join(dir, name);
      await byName[name].saveAs(path);
      const want = await readFile(join(fixtures, `tiny-tied-Q4_K_M-keep-split-0000${k + 1}-of-00003.gguf`));
      assert.deepEqual(await ggufTensors(amn, await readFile(path)), await ggufTensors(amn, want), name);
    }
  });
});
