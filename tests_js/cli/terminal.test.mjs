// Both CLIs on a terminal and in a pipe: the progress bar is erased before the "wrote"
// line (it used to end on the 100 % bar), -q draws no bar, and a reader that closes the
// pipe early (`amn inspect x | head`) ends the CLI quietly, with no stack trace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, ROOT } from '../support/helpers.js';
import { f32Bytes, makeSafetensors } from '../support/safetensors.js';

const CLIS = { native: [join(ROOT, 'build', 'native', 'amn')], node: [process.execPath, BIN] };
const TINY = join(ROOT, 'fixtures', 'models', 'tiny-mlp', 'model.safetensors');

// Runs argv under `script`, which gives it a pseudo-terminal for stdin, stdout and stderr.
function onTerminal(argv) {
  const command = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'latin1', env: { ...process.env, TERM: 'dumb' } });
}

for (const [name, cli] of Object.entries(CLIS)) {
  test(`${name}: on a terminal the bar is erased before the wrote line; -q draws none`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'amn-tty-'));
    try {
      const out = join(dir, 'out.safetensors');
      const r = onTerminal([...cli, 'remember', TINY, '--to', 'f32', '-o', out]);
      assert.equal(r.status, 0, r.stdout);
      assert.match(r.stdout, /remember \[/, 'a bar was drawn');
      // The wrote line starts on a clean line: right after the bar's erase sequence.
      assert.match(r.stdout, /\r\x1b\[Kwrote [^\r]*\(\d+ tensors, [^)]+\)\r?\n$/);
      const quiet = onTerminal([...cli, 'remember', TINY, '--to', 'f32', '-o', out, '--force', '-q']);
      assert.equal(quiet.status, 0, quiet.stdout);
      assert.equal(quiet.stdout, '', 'nothing at all with -q');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`${name}: a reader that closes the pipe early ends it quietly`, async (t) => {
    // Enough tensors that `parse` prints far more than a pipe holds (64 KiB).
    const dir = mkdtempSync(join(tmpdir(), 'amn-pipe-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const many = join(dir, 'many.safetensors');
    writeFileSync(many, makeSafetensors(Array.from({ length: 6000 }, (_, i) => (
      { name: `model.layers.${i}.weight`, dtype: 'F32', shape: [1], data: f32Bytes([i]) }))));
    const child = spawn(cli[0], [...cli.slice(1), 'parse', many], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    // Read the first chunk, then close our end, as `head -c 1` would.
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy();
    const [code, signal] = await new Promise((resolve) => child.on('close', (c, s) => resolve([c, s])));
    assert.equal(stderr, '', 'no message, no stack trace');
    assert.ok(code === 0 || signal === 'SIGPIPE', `exit ${code} / ${signal}`);
  });
}
