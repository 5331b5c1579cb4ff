// AMN_FORCE_IMPL as the native CLI reads it: a name this build cannot run is refused
// on every verb (an ignored typo would silently test or benchmark the default kernels);
// a valid one, and no variable at all, run as usual.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, FIXTURES, scratchDir } from '../support/helpers.js';

const AMN = process.env.AMN_NATIVE || join(ROOT, 'build/native/amn');
const TINY = join(FIXTURES, 'models/tiny-mlp/model.safetensors');

function amn(args, env = {}) {
  const r = spawnSync(AMN, args, { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('AMN_FORCE_IMPL=bogus fails every verb with invalid_argument and lists the implementations', () => {
  const out = join(scratchDir('amn-force-impl-'), 'out.safetensors');
  for (const args of [['inspect', TINY], ['parse', TINY], ['inspect', TINY, '--json'],
    ['remember', TINY, '-o', out, '-q'], ['convert', TINY, '--to', 'safetensors', '--dtype', 'f16', '-o', out, '-q']]) {
    const r = amn(args, { AMN_FORCE_IMPL: 'bogus' });
    assert.equal(r.code, 1, `${args[0]}: exit code`);
    assert.equal(r.out, '', `${args[0]}: nothing on stdout`);
    assert.match(r.err, /^amn: error \[invalid_argument\]: AMN_FORCE_IMPL=bogus is not an implementation .*\(available: scalar(, \w+)*\)\n$/,
      `${args[0]}: ${r.err}`);
  }
  assert.equal(spawnSync('ls', [out]).status, 2, 'no output was written');
});

test('AMN_FORCE_IMPL=scalar (always compiled) and no variable both work', () => {
  const scalar = amn(['inspect', TINY], { AMN_FORCE_IMPL: 'scalar' });
  assert.equal(scalar.code, 0, scalar.err);
  const env = { ...process.env };
  delete env.AMN_FORCE_IMPL;
  const plain = spawnSync(AMN, ['inspect', TINY], { encoding: 'utf8', env });
  assert.equal(plain.status, 0, plain.stderr);
  assert.equal(scalar.out, plain.stdout);
});
