// web/src/names.js without a browser: natural order and middle shortening.
//   node --test tests_js/browser/names.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareNatural, distinguishingParts, middleEllipsis, shortenName } from '../../web/src/names.js';

test('compareNatural: numbers by value, the rest by code point, the same everywhere', () => {
  const names = ['layers.10.w', 'layers.2.w', 'layers.1.w', 'layers.02.w', 'Layers.3.w', 'layers.2.b', 'layers', 'a10b2', 'a10b10', 'a9'];
  assert.deepEqual([...names].sort(compareNatural),
    ['Layers.3.w', 'a9', 'a10b2', 'a10b10', 'layers', 'layers.1.w', 'layers.2.b', 'layers.2.w', 'layers.02.w', 'layers.10.w']);
  assert.equal(compareNatural('x', 'x'), 0);
  // Digits beyond a double's precision still compare exactly.
  assert.ok(compareNatural('t.123456789012345678901', 't.123456789012345678902') < 0);
});

test('shortenName: whole parts go first, keeping the numbers and the last two parts', () => {
  const name = 'model.layers.10.self_attn.q_proj.weight';
  assert.equal(shortenName(name, 100), name);
  assert.equal(shortenName(name, name.length), name);
  assert.equal(shortenName(name, 34), '…layers.10.self_attn.q_proj.weight');
  assert.equal(shortenName(name, 27), '…10.self_attn.q_proj.weight');
  assert.equal(shortenName(name, 17), '…10…q_proj.weight');
  for (let room = 8; room <= name.length; room += 1) {
    const shown = shortenName(name, room);
    assert.ok(shown.length <= room, `${room}: "${shown}"`);
    if (room >= 17) for (const part of distinguishingParts(name)) assert.ok(shown.includes(part), `${room}: "${shown}" keeps ${part}`);
  }
  // Too little room even for the kept parts: characters go from the middle, more kept at the end.
  assert.equal(shortenName(name, 10), '…10…weight');
  assert.equal(middleEllipsis('abcdefghij', 7), 'ab…ghij');
  assert.equal(middleEllipsis('abc', 1), '…');
});

test('distinguishingParts: numbers and the last two parts', () => {
  assert.deepEqual(distinguishingParts('model.layers.3.mlp.experts.17.w1.weight'), ['3', '17', 'w1', 'weight']);
  assert.deepEqual(distinguishingParts('lm_head.weight'), ['lm_head', 'weight']);
  assert.deepEqual(distinguishingParts('bias'), ['bias']);
});
