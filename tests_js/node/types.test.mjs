// npm/index.d.ts is type-checked: tsc --strict over a usage file (types-usage.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NPM, ROOT } from '../support/helpers.js';

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

// The declared unions follow the runtime lists: every code ERROR_CODES holds is an
// ErrorCode, and every GGUF block type the core names is a DType.
test('ErrorCode lists every runtime error code; DType every GGUF block type', async () => {
  const dts = readFileSync(join(NPM, 'index.d.ts'), 'utf8');
  const union = (name) => {
    const m = dts.match(new RegExp(`export type ${name} =([^;]+);`));
    assert.ok(m, `${name} is declared`);
    return new Set([...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1]));
  };
  const { ERROR_CODES } = await import(join(NPM, 'lib', 'errors.js'));
  const codes = union('ErrorCode');
  for (const code of ERROR_CODES) assert.ok(codes.has(code), `ErrorCode lacks '${code}'`);
  // fixtures/ggml/manifest.json: every block type ggml quantizes.
  const manifest = JSON.parse(readFileSync(join(ROOT, 'fixtures', 'ggml', 'manifest.json'), 'utf8'));
  const blocks = union('GgmlBlockType');
  for (const { name } of manifest.types) assert.ok(blocks.has(name), `GgmlBlockType lacks '${name}'`);
  assert.match(dts, /export type DType = SafetensorsDType \| GgmlBlockType \| `type \$\{number\}`;/);
});
