// The browser entry (npm/index.js) run in Node: no paths, a Blob when there is no sink.
// (Real browsers: tests_js/browser/.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NPM, loadPackage, rejectsWith, sha256, tempDir } from '../support/helpers.js';
import { sampleBytes } from '../support/sample.js';
import { startRangeServer } from '../support/range-server.js';

const web = await loadPackage('index.js');
const node = await loadPackage('node.js');
// Node's fetch cannot read file: URLs, so hand the browser entry the bytes.
await web.init({ wasmBinary: await readFile(join(NPM, 'dist', 'amn-core.wasm')) });

test('Blob in, Blob out, the same bytes as the Node entry', async () => {
  const model = await web.open(new File([sampleBytes()], 'sample.safetensors'));
  const blob = await model.convert({ dtype: 'bf16' });
  assert.ok(blob instanceof Blob);
  const viaNode = await (await node.open(sampleBytes(), { name: 'sample.safetensors' })).convert({ dtype: 'bf16' });
  assert.equal(sha256(new Uint8Array(await blob.arrayBuffer())), sha256(viaNode));
  await model.close();
});

test('URLs work; paths are not sources', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'sample.safetensors'), sampleBytes());
  const server = await startRangeServer({ root: dir });
  t.after(() => server.close());
  const model = await web.open(`${server.url}sample.safetensors`);
  assert.equal(model.info.tensors.length, 7);
  await model.close();
  await rejectsWith(assert, web.open(join(dir, 'sample.safetensors')), 'invalid_argument');
  await rejectsWith(assert, (await web.open(sampleBytes())).convert({ sink: join(dir, 'x.safetensors') }), 'invalid_argument');
});
