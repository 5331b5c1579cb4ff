// --no-sync on the writing verbs (remember, convert) of the native `amn` and of the Node
// CLI: the same bytes, through the same temporary name and rename, and no fsync at all.
// The syscalls are counted with strace (tools/bootstrap.sh installs it; without it those
// tests fail rather than pass untested).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const AMN = process.env.AMN_NATIVE || join(root, 'build/native/amn');
const NODE_AMN = join(root, 'npm/dist/amn.cjs');
const TINY = join(root, 'fixtures/models/tiny-mlp/model.safetensors');
const SHARDED = join(root, 'fixtures/models/tiny-sharded');
const STRACE = ['/usr/bin/strace', '/bin/strace'].find((p) => spawnSync(p, ['-V']).status === 0);

const CLIS = [
  { name: 'native amn', argv: (args) => [AMN, ...args] },
  { name: 'Node amn', argv: (args) => [process.execPath, NODE_AMN, ...args] },
];

function run(argv) {
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
  assert.equal(r.status, 0, `${argv.join(' ')}: ${r.stderr}`);
}

// fsync/fdatasync calls made by the command and every thread and child it starts.
function countSyncs(argv, dir) {
  const log = join(dir, 'strace.log');
  const r = spawnSync(STRACE, ['-f', '-qq', '-e', 'trace=fsync,fdatasync', '-o', log, ...argv], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${argv.join(' ')}: ${r.stderr}`);
  const calls = readFileSync(log, 'utf8').split('\n').filter((l) => /\b(fsync|fdatasync)\(/.test(l)).length;
  rmSync(log);
  return calls;
}

const bytes = (p) => readFileSync(p).toString('hex');
const tmp = (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'amn-nosync-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

for (const cli of CLIS) {
  test(`${cli.name}: --help lists --no-sync for remember and convert`, () => {
    for (const verb of ['remember', 'convert']) {
      const r = spawnSync(cli.argv([verb, '--help'])[0], cli.argv([verb, '--help']).slice(1), { encoding: 'utf8' });
      const text = r.stdout + r.stderr;
      assert.match(text, /--no-sync/, `${verb} --help`);
    }
  });

  test(`${cli.name}: convert and remember --no-sync write the same bytes as without`, (t) => {
    const dir = tmp(t);
    for (const [verb, extra] of [['convert', ['--to', 'safetensors', '--dtype', 'bf16']], ['remember', ['--to', 'f16']]]) {
      const durable = join(dir, `${verb}-durable.safetensors`);
      const scratch = join(dir, `${verb}-scratch.safetensors`);
      run(cli.argv([verb, TINY, ...extra, '-o', durable, '-q']));
      run(cli.argv([verb, TINY, ...extra, '-o', scratch, '-q', '--no-sync']));
      assert.equal(bytes(scratch), bytes(durable), verb);
    }
    // Sharded: a folder renamed into place, the same files.
    run(cli.argv(['remember', SHARDED, '-o', join(dir, 'shards-durable'), '-q']));
    run(cli.argv(['remember', SHARDED, '-o', join(dir, 'shards-scratch'), '-q', '--no-sync']));
    const names = readdirSync(join(dir, 'shards-durable')).sort();
    assert.ok(names.length >= 3);
    assert.deepEqual(readdirSync(join(dir, 'shards-scratch')).sort(), names);
    for (const n of names) assert.equal(bytes(join(dir, 'shards-scratch', n)), bytes(join(dir, 'shards-durable', n)), n);
    assert.ok(!readdirSync(dir).some((n) => n.startsWith('.amn-tmp-')), 'no temporary left behind');
  });

  test(`${cli.name}: fsyncs by default, none with --no-sync (strace)`, (t) => {
    assert.ok(STRACE, 'strace is not installed (tools/bootstrap.sh installs it)');
    const dir = tmp(t);
    const one = (name, flags) => countSyncs(cli.argv(['convert', TINY, '--to', 'safetensors', '-o', join(dir, name), '-q', ...flags]), dir);
    assert.ok(one('a.safetensors', []) >= 2, 'the file and its folder are fsynced by default');
    assert.equal(one('b.safetensors', ['--no-sync']), 0);
    const folder = (name, flags) => countSyncs(cli.argv(['remember', SHARDED, '-o', join(dir, name), '-q', ...flags]), dir);
    assert.ok(folder('s1', []) >= 4, 'every shard, the index and the folders are fsynced by default');
    assert.equal(folder('s2', ['--no-sync']), 0);
    assert.equal(bytes(join(dir, 'b.safetensors')), bytes(join(dir, 'a.safetensors')));
  });
}
