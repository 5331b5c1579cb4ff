// The published npm package: what `npm pack` puts in the tarball (the licence files
// included, copied in by the prepack step), the metadata npm shows, and README links
// that work from the npm page (absolute, since npm has no repository tree).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NPM, ROOT, tempDir } from '../support/helpers.js';

const REPO = 'https://github.com/anamnesis-ml/anamnesis';

test('npm pack: the tarball holds LICENSE-MIT and LICENSE-APACHE, equal to the root copies', async (t) => {
  const dir = await tempDir(t, 'amn-pack-');
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: NPM, encoding: 'utf8' });
  const [{ filename }] = JSON.parse(out);
  const tarball = join(dir, filename);
  const entries = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
  for (const name of ['LICENSE-MIT', 'LICENSE-APACHE']) {
    assert.ok(entries.includes(`package/${name}`), `${name} in ${entries.join(' ')}`);
    const packed = execFileSync('tar', ['-xzOf', tarball, `package/${name}`]);
    assert.ok(packed.equals(readFileSync(join(ROOT, name))), `${name} is the root's`);
  }
  assert.match(readFileSync(join(ROOT, 'LICENSE-MIT'), 'utf8'), /Copyright \(c\) The anamnesis authors/);
  assert.match(readFileSync(join(ROOT, 'LICENSE-APACHE'), 'utf8'), /Apache License\s+Version 2\.0, January 2004/);
});

test('package.json: licence, repository, homepage, bugs; not described as safetensors-only', () => {
  const pkg = JSON.parse(readFileSync(join(NPM, 'package.json'), 'utf8'));
  assert.equal(pkg.license, 'MIT OR Apache-2.0');
  assert.equal(pkg.repository.url, `git+${REPO}.git`);
  assert.equal(pkg.homepage, `${REPO}#readme`);
  assert.equal(pkg.bugs.url, `${REPO}/issues`);
  for (const format of ['safetensors', 'GGUF', 'NumPy', 'PyTorch']) assert.match(pkg.description, new RegExp(format));
});

test('npm/README.md links are absolute (they are read on the npm page)', () => {
  const text = readFileSync(join(NPM, 'README.md'), 'utf8');
  const links = [...text.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]);
  assert.ok(links.some((l) => l.startsWith(`${REPO}/blob/main/docs/js-api.md`)), 'links the JS reference');
  for (const link of links) assert.match(link, /^(https?:|#)/, `relative link ${link}`);
  assert.doesNotMatch(text, /`docs\/[^`]+` in the repository/);
});
