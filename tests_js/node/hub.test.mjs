// A Hugging Face repository URL (https://huggingface.co/ORG/REPO) opens as a folder: the
// Hub's API lists the files, the core's folder rule picks the model, the files are read
// with Range from …/resolve/REV/NAME. Tested against a local fake of the API: files laid
// out on disk as the Hub serves them, behind the range server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES, loadPackage, rejectsWith, tempDir } from '../support/helpers.js';
import { startRangeServer } from '../support/range-server.js';

const amn = await loadPackage();
const TINY = join(FIXTURES, 'models', 'tiny-mlp');
const SHARDED = join(FIXTURES, 'models', 'tiny-sharded');

// root/api/models/ORG/REPO/revision/REV (the listing) and root/ORG/REPO/resolve/REV/NAME.
async function fakeHub(t, repos) {
  const root = await tempDir(t, 'amn-hub-');
  for (const { repo, revision = 'main', from, extra = [] } of repos) {
    const files = await readdir(from);
    const folder = join(root, repo, 'resolve', revision);
    await mkdir(folder, { recursive: true });
    for (const f of files) await copyFile(join(from, f), join(folder, f));
    const api = join(root, 'api', 'models', repo, 'revision');
    await mkdir(api, { recursive: true });
    const siblings = [...files, ...extra].map((rfilename) => ({ rfilename }));
    await writeFile(join(api, revision), JSON.stringify({ id: repo, sha: '0'.repeat(40), siblings }));
  }
  const server = await startRangeServer({ root });
  t.after(() => server.close());
  return server;
}

test('a repository URL opens its model as its folder would: the listing, then one ranged read per file', async (t) => {
  const server = await fakeHub(t, [{ repo: 'org/tiny', from: TINY, extra: ['original/consolidated.pth', 'README.md'] }]);
  const local = await amn.open(TINY);  // the folder: model.safetensors + config.json
  const model = await amn.open(`${server.url}org/tiny`, { hubEndpoint: server.url, accessToken: 'hf_token' });
  assert.deepEqual(model.info.tensors, local.info.tensors);
  assert.deepEqual(model.info.config, local.info.config);
  const log = server.stats.log;
  assert.equal(log[0].path, '/api/models/org/tiny/revision/main');
  assert.deepEqual(log.slice(1).map((r) => r.path).sort(), ['/org/tiny/resolve/main/config.json', '/org/tiny/resolve/main/model.safetensors']);
  assert.ok(log.every((r) => r.method === 'GET' && r.authorization === 'Bearer hf_token'), JSON.stringify(log));
  assert.deepEqual([...(await model.tensor(local.info.tensors[0].name)).data], [...(await local.tensor(local.info.tensors[0].name)).data]);
  await model.close();
  await local.close();
});

test('a sharded repository at a revision: index, shards and config.json from the listing, nothing probed', async (t) => {
  const server = await fakeHub(t, [{ repo: 'org/sharded', revision: 'v1', from: SHARDED }]);
  const model = await amn.open(`${server.url}org/sharded/tree/v1`, { hubEndpoint: server.url });
  const local = await amn.open(SHARDED);
  assert.deepEqual(model.info.tensors.map((x) => x.name), local.info.tensors.map((x) => x.name));
  assert.equal(model.info.config.model_type, local.info.config.model_type);
  assert.ok(server.stats.log.every((r) => r.status === 200 || r.status === 206), `no 404 probes: ${JSON.stringify(server.stats.log)}`);
  await model.close();
  await local.close();
});

test('hub errors: a missing repository, one without a model, a Hub page that is no repository', async (t) => {
  const server = await fakeHub(t, [{ repo: 'org/empty', from: await tempDir(t) }]);
  await rejectsWith(assert, amn.open(`${server.url}org/missing`, { hubEndpoint: server.url }), 'not_found', 'org/missing');
  await rejectsWith(assert, amn.open(`${server.url}org/empty`, { hubEndpoint: server.url }), 'io', 'holds no model files');
  // Not a repository URL: read as a plain file URL (here: not found).
  await rejectsWith(assert, amn.open(`${server.url}datasets/x`, { hubEndpoint: server.url }), 'io', '404');
});
