// The `amn` command npm ships is npm/dist/amn.cjs, npm/bin/amn.js bundled with the modules
// it imports (tools/bundle-cli.mjs, the amn-cli build target); every CLI test runs that
// file. Here: package.json names it, the tarball holds it, and it is not older than a
// source it bundles (else the tests would test stale code: rebuild it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, NPM, ROOT, tempDir } from '../support/helpers.js';

test('dist/amn.cjs is the package\'s bin, and no older than any source it bundles', () => {
  const pkg = JSON.parse(readFileSync(join(NPM, 'package.json'), 'utf8'));
  assert.equal(join(NPM, pkg.bin.amn), BIN);
  const built = statSync(BIN).mtimeMs;
  const sources = [
    join(ROOT, 'tools', 'bundle-cli.mjs'), join(NPM, 'dist', 'error-codes.js'),
    ...['.', 'bin', 'lib'].flatMap((d) => readdirSync(join(NPM, d)).filter((f) => f.endsWith('.js')).map((f) => join(NPM, d, f))),
  ];
  for (const s of sources) {
    assert.ok(statSync(s).mtimeMs <= built, `${s} is newer than ${BIN}: rebuild it (ninja -C build/wasm amn-cli)`);
  }
  assert.match(readFileSync(BIN, 'utf8'), /^#!\/usr\/bin\/env node\n/);
});

test('npm pack: the tarball holds dist/amn.cjs, the sources it was bundled from need not ship', async (t) => {
  const dir = await tempDir(t, 'amn-pack-bin-');
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: NPM, encoding: 'utf8' });
  const [{ filename }] = JSON.parse(out);
  const entries = execFileSync('tar', ['-tzf', join(dir, filename)], { encoding: 'utf8' }).split('\n');
  for (const f of ['dist/amn.cjs', 'dist/amn-core.js', 'dist/amn-core.wasm', 'node.js', 'lib/model.js']) {
    assert.ok(entries.includes(`package/${f}`), `${f} in ${entries.join(' ')}`);
  }
  const packed = execFileSync('tar', ['-xzOf', join(dir, filename), 'package/dist/amn.cjs']);
  assert.ok(packed.equals(readFileSync(BIN)), 'the packed bin is the one the tests run');
});

// What a cold start loads is the one cost of a small `npx amn inspect` that is not the
// core's (docs/benchmarks.md, "Cold start"). Node's ES-module loader, node:http(s) with TLS
// and crypto, and node:util's getters (parseArgs, MIMEType) each cost milliseconds there; a
// local inspect needs none of them, and a change that pulls one in back to every start
// (a static import in a module the bundle holds, an ES-module bin) fails here.
test('a local inspect loads no ES-module loader, network, crypto or node:util modules', async (t) => {
  const dir = await tempDir(t, 'amn-cold-modules-');
  const preload = join(dir, 'modules.cjs');
  writeFileSync(preload, "process.on('exit', () => require('node:fs').writeSync(2, '\\nMODULES ' + JSON.stringify(process.moduleLoadList)));\n");
  const gguf = join(ROOT, 'fixtures', 'gguf_ftype', 'tiny-Q4_K_M.gguf');
  const r = spawnSync(process.execPath, ['-r', preload, BIN, 'inspect', gguf], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^format\s+gguf$/m);
  const loaded = JSON.parse(r.stderr.slice(r.stderr.lastIndexOf('\nMODULES ') + 9));
  assert.ok(loaded.includes('NativeModule fs'), 'the list is the one Node keeps');
  const unwanted = ['internal/modules/esm/translators', 'http', 'https', 'tls', 'crypto', 'internal/util/parse_args/parse_args', 'internal/mime'];
  for (const m of unwanted) assert.ok(!loaded.includes(`NativeModule ${m}`), `${m} loaded by a local inspect`);
});
