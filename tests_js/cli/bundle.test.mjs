// The `amn` command npm ships is npm/dist/amn.js, npm/bin/amn.js bundled with the modules
// it imports (tools/bundle-cli.mjs, the amn-cli build target); every CLI test runs that
// file. Here: package.json names it, the tarball holds it, and it is not older than a
// source it bundles (else the tests would test stale code: rebuild it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, NPM, ROOT, tempDir } from '../support/helpers.js';

test('dist/amn.js is the package\'s bin, and no older than any source it bundles', () => {
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

test('npm pack: the tarball holds dist/amn.js, the sources it was bundled from need not ship', async (t) => {
  const dir = await tempDir(t, 'amn-pack-bin-');
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: NPM, encoding: 'utf8' });
  const [{ filename }] = JSON.parse(out);
  const entries = execFileSync('tar', ['-tzf', join(dir, filename)], { encoding: 'utf8' }).split('\n');
  for (const f of ['dist/amn.js', 'dist/amn-core.js', 'dist/amn-core.wasm', 'node.js', 'lib/model.js']) {
    assert.ok(entries.includes(`package/${f}`), `${f} in ${entries.join(' ')}`);
  }
  const packed = execFileSync('tar', ['-xzOf', join(dir, filename), 'package/dist/amn.js']);
  assert.ok(packed.equals(readFileSync(BIN)), 'the packed bin is the one the tests run');
});
