// Shared test helpers: where things are, loading the package (failing loudly when the
// WASM core has not been built), hashes and temporary folders.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const NPM = join(ROOT, 'npm');
export const FIXTURES = join(ROOT, 'fixtures');
// The `amn` command npm ships: npm/bin/amn.js bundled with what it imports (tools/bundle-cli.mjs).
export const BIN = join(NPM, 'dist', 'amn.cjs');

// Not a skip: without the built core every test must fail, and say why.
export function assertDistBuilt() {
  for (const f of ['amn-core.js', 'amn-core.wasm']) {
    const p = join(NPM, 'dist', f);
    if (!existsSync(p)) {
      throw new Error(`${p} is missing: build the WASM core first `
        + '(emcmake cmake -S . -B build/wasm -G Ninja ... && ninja -C build/wasm amn-core)');
    }
  }
}

export async function loadPackage(entry = 'node.js') {
  assertDistBuilt();
  return import(join(NPM, entry));
}

export function sha256(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return createHash('sha256').update(u8).digest('hex');
}

export const bytesOf = (typed) => new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);

// A temporary folder removed after the test (t = the node:test context).
// A temporary folder for code without a test context: removed when the test file's
// process exits (each file runs in its own process).
const scratch = [];
process.once('exit', () => { for (const dir of scratch) rmSync(dir, { recursive: true, force: true }); });
export function scratchDir(prefix = 'amn-test-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}

export async function tempDir(t, prefix = 'amn-test-') {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

// Asserts that `promise` rejects as an aborted web API does: a DOMException named
// AbortError whose cause is the AmnError 'cancelled'.
export async function rejectsAborted(assert, promise) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof DOMException, `expected a DOMException, got ${err?.stack || err}`);
    assert.equal(err.name, 'AbortError');
    assert.equal(err.cause?.name, 'AmnError');
    assert.equal(err.cause.code, 'cancelled');
    return true;
  });
}

// Asserts that `promise` rejects with an AmnError of `code` (and `includes` in its message).
export async function rejectsWith(assert, promise, code, includes) {
  await assert.rejects(promise, (err) => {
    assert.equal(err?.name, 'AmnError', `expected an AmnError, got ${err?.stack || err}`);
    assert.equal(err.code, code, `code of: ${err.message}`);
    if (includes) assert.ok(err.message.includes(includes), `"${err.message}" should include "${includes}"`);
    return true;
  });
}
