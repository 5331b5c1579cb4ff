// `kill -9` in the middle of a write leaves nothing beside the target. The native amn is
// killed at an exact system call by strace's fault injection (`-e inject=SYSCALL:
// signal=SIGKILL:when=N`): deterministic, no timing. Where a file system has no
// O_TMPFILE (simulated with strace: openat on the output folder fails with EOPNOTSUPP)
// the temporary is named; it and the temporary folder of a killed sharded write are
// removed by the next output written into that folder, once their process is gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, FIXTURES, scratchDir } from '../support/helpers.js';

const AMN = process.env.AMN_NATIVE || join(ROOT, 'build/native/amn');
const TINY = join(FIXTURES, 'models/tiny-mlp/model.safetensors');
const SHARDED = join(FIXTURES, 'models/tiny-sharded');
const STRACE = ['/usr/bin/strace', '/bin/strace'].find((p) => spawnSync(p, ['-V']).status === 0);

// Runs amn under strace with `straceArgs`; returns { killed, pid } (pid: amn's).
function killedAt(straceArgs, args) {
  assert.ok(STRACE, 'strace is not installed (tools/bootstrap.sh installs it)');
  const r = spawnSync(STRACE, ['-f', '-qq', '-o', '/dev/null', ...straceArgs, AMN, ...args], { encoding: 'utf8' });
  // strace ends the way its tracee did: killed by SIGKILL (or exit status 137).
  const killed = r.signal === 'SIGKILL' || r.status === 137;
  return { killed, out: r.stdout, err: r.stderr, status: r.status };
}

// Which of amn's write() calls is its `n`-th write to a file under `dir` (opened there,
// O_TMPFILE included), learned from a traced run of the same command into `dir`: the
// kill then lands on that very write, whatever else the binary writes (a sanitizer's
// runtime, say). Lines look like `123 openat(AT_FDCWD, "/d", O_WRONLY|O_TMPFILE, 0644) = 4`.
function nthWriteUnder(args, dir, n) {
  const log = join(scratchDir('amn-trace-'), 'trace.log');
  const r = spawnSync(STRACE, ['-f', '-qq', '-o', log, '-e', 'trace=openat,write,close', AMN, ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const ours = new Set();
  let writes = 0;
  let mine = 0;
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    const open = line.match(/openat\(AT_FDCWD, "([^"]*)", [^)]*\) = (\d+)/);
    if (open && open[1].startsWith(dir)) ours.add(open[2]);
    const close = line.match(/close\((\d+)\)/);
    if (close) ours.delete(close[1]);
    const write = line.match(/ write\((\d+),/);
    if (!write) continue;
    writes += 1;
    if (ours.has(write[1]) && ++mine === n) return writes;
  }
  throw new Error(`fewer than ${n} writes under ${dir}`);
}

function amn(args) {
  const r = spawnSync(AMN, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `amn ${args.join(' ')}: ${r.stderr}`);
}

const ls = (dir) => readdirSync(dir).sort();

test('killed mid-write (and after the last byte, before the link): nothing beside the target', () => {
  const out = scratchDir('amn-crash-');
  const target = join(out, 'tiny-bf16.safetensors');
  // The output's write #1 is the header, #2 the first piece; the fsync comes after the
  // last byte.
  const dry = scratchDir('amn-crash-dry-');
  const second = nthWriteUnder(['remember', TINY, '--to', 'bf16', '-o', join(dry, 'a.safetensors'), '-q'], dry, 2);
  for (const inject of [`write:signal=SIGKILL:when=${second}`, 'fsync:signal=SIGKILL:when=1']) {
    const r = killedAt(['-e', `trace=${inject.split(':')[0]}`, '-e', `inject=${inject}`],
      ['remember', TINY, '--to', 'bf16', '-o', target, '-q']);
    assert.ok(r.killed, `${inject}: amn was not killed (status ${r.status}: ${r.err})`);
    assert.deepEqual(ls(out), [], `${inject}: nothing is left in the output folder`);
  }
  // And the next run writes the file.
  amn(['remember', TINY, '--to', 'bf16', '-o', target, '-q']);
  assert.deepEqual(ls(out), ['tiny-bf16.safetensors']);
});

test('--force: killed between the link and the rename, the old file stays whole; the next output cleans up', () => {
  const out = scratchDir('amn-crash-force-');
  const target = join(out, 'model.safetensors');
  writeFileSync(target, 'the old file');
  const r = killedAt(['-e', 'trace=rename,renameat,renameat2', '-e', 'inject=rename,renameat,renameat2:signal=SIGKILL'],
    ['remember', TINY, '--to', 'bf16', '-o', target, '-q', '--force']);
  assert.ok(r.killed, `amn was not killed (status ${r.status}: ${r.err})`);
  assert.equal(readFileSync(target, 'utf8'), 'the old file', 'the target is untouched');
  const left = ls(out).filter((n) => n !== 'model.safetensors');
  assert.equal(left.length, 1, 'the crash window leaves one named link');
  assert.match(left[0], /^\.amn-tmp-pid\d+-model\.safetensors-/);
  amn(['remember', TINY, '--to', 'f16', '-o', join(out, 'other.safetensors'), '-q']);
  assert.deepEqual(ls(out), ['model.safetensors', 'other.safetensors'], 'the stale temporary was removed');
  // --force still replaces atomically when nothing goes wrong.
  amn(['remember', TINY, '--to', 'bf16', '-o', target, '-q', '--force']);
  assert.notEqual(readFileSync(target, 'utf8'), 'the old file');
  assert.deepEqual(ls(out), ['model.safetensors', 'other.safetensors']);
});

test('without O_TMPFILE: a named temporary, removed by the next output once its process is dead', () => {
  const out = scratchDir('amn-crash-named-');
  const target = join(out, 'tiny.safetensors');
  // openat on the folder itself (the O_TMPFILE open) fails as on a file system without
  // it; the link of the finished temporary to the target kills amn.
  const r = killedAt(['-P', out, '-P', target, '-e', 'trace=openat,link,linkat',
    '-e', 'inject=openat:error=EOPNOTSUPP', '-e', 'inject=link,linkat:signal=SIGKILL'],
  ['remember', TINY, '--to', 'bf16', '-o', target, '-q']);
  assert.ok(r.killed, `amn was not killed (status ${r.status}: ${r.err})`);
  const left = ls(out);
  assert.equal(left.length, 1, `one temporary left: ${left}`);
  assert.match(left[0], /^\.amn-tmp-pid\d+-tiny\.safetensors-/);
  // The same fallback, not killed: the output is right and nothing is left.
  const r2 = spawnSync(STRACE, ['-f', '-qq', '-o', '/dev/null', '-P', out, '-e', 'trace=openat',
    '-e', 'inject=openat:error=EOPNOTSUPP', AMN, 'remember', TINY, '--to', 'bf16', '-o', join(out, 'b.safetensors'), '-q']);
  assert.equal(r2.status, 0, String(r2.stderr));
  amn(['remember', TINY, '--to', 'bf16', '-o', join(out, 'c.safetensors'), '-q']);
  assert.deepEqual(readFileSync(join(out, 'b.safetensors')), readFileSync(join(out, 'c.safetensors')));
  // The stale temporary went when b or c was written.
  assert.deepEqual(ls(out), ['b.safetensors', 'c.safetensors']);
});

test('a sharded write killed midway leaves its temporary folder; the next output removes it', () => {
  const out = scratchDir('amn-crash-folder-');
  const target = join(out, 'tiny-sharded-bf16');
  const dry = scratchDir('amn-crash-dry-');
  const third = nthWriteUnder(['remember', SHARDED, '-o', join(dry, 'x'), '-q', '--no-sync'], dry, 3);
  const r = killedAt(['-e', 'trace=write', '-e', `inject=write:signal=SIGKILL:when=${third}`],
    ['remember', SHARDED, '-o', target, '-q', '--no-sync']);
  assert.ok(r.killed, `amn was not killed (status ${r.status}: ${r.err})`);
  const left = ls(out);
  assert.equal(left.length, 1);
  assert.match(left[0], /^\.amn-tmp-pid\d+-tiny-sharded-bf16-/);
  amn(['remember', SHARDED, '-o', target, '-q']);
  assert.deepEqual(ls(out), ['tiny-sharded-bf16']);
  assert.ok(ls(target).length >= 4, 'the shards and the index');
});

test('temporaries of live processes, and names that are not ours, are kept', () => {
  const out = scratchDir('amn-crash-live-');
  const dead = spawnSync('true').pid;  // exited: its pid names no process (until reused)
  const mine = `.amn-tmp-pid${process.pid}-x.safetensors-abcdef`;  // this test runner: alive
  const stale = `.amn-tmp-pid${dead}-y.safetensors-abcdef`;
  const staleFolder = `.amn-tmp-pid${dead}-z-abcdef`;
  const old = '.amn-tmp-w.safetensors-abcdef';  // an older amn's name: no pid, left alone
  for (const n of [mine, stale, old]) writeFileSync(join(out, n), 'x');
  mkdirSync(join(out, staleFolder));
  copyFileSync(TINY, join(out, staleFolder, 'model.safetensors'));
  amn(['remember', TINY, '--to', 'bf16', '-o', join(out, 'new.safetensors'), '-q']);
  assert.deepEqual(ls(out), [old, mine, 'new.safetensors'].sort());
});
