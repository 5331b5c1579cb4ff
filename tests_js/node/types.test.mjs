// npm/index.d.ts is type-checked: tsc --strict over a usage file (types-usage.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/helpers.js';

test('index.d.ts compiles under tsc --strict and rejects misuse', async () => {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  assert.ok(existsSync(tsc), `${tsc} is missing: run npm ci at the repository root`);
  const args = [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext',
    '--moduleResolution', 'nodenext', '--lib', 'es2022,dom',
    join(ROOT, 'tests_js', 'node', 'types-usage.ts')];
  const result = await new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: ROOT }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, out: stdout + stderr }));
  });
  assert.equal(result.code, 0, result.out);
});
