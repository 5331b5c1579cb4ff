// Tensor names as people read them: sorted naturally (layers.2 before layers.10) and
// shortened in the middle, never at the end, where q_proj and k_proj differ. No DOM here.

const RUNS = /(\d+)|(\D+)/g;

function runsOf(name) {
  return name.match(RUNS) ?? [];
}

// Digit runs compare as numbers (then by length, so "02" and "2" still order), other runs
// by code point: the same order on every machine, whatever the locale.
export function compareNatural(a, b) {
  const x = runsOf(a);
  const y = runsOf(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i += 1) {
    const p = x[i];
    const q = y[i];
    if (p === q) continue;
    const pd = p.charCodeAt(0) <= 57 && p.charCodeAt(0) >= 48;
    const qd = q.charCodeAt(0) <= 57 && q.charCodeAt(0) >= 48;
    if (pd && qd) {
      const pv = p.replace(/^0+/, '');
      const qv = q.replace(/^0+/, '');
      if (pv.length !== qv.length) return pv.length - qv.length;
      if (pv !== qv) return pv < qv ? -1 : 1;
      return p.length - q.length;
    }
    return p < q ? -1 : 1;
  }
  return x.length - y.length;
}

// The part of a name that tells it from its neighbours: its numbers (the layer, the
// expert) and its last two dotted parts ("q_proj.weight"). The tests check that this
// stays visible however narrow the column is.
export function distinguishingParts(name) {
  const parts = name.split('.');
  const keep = kept(parts);
  return parts.filter((_, i) => keep[i]);
}

function kept(parts) {
  return parts.map((p, i) => i >= parts.length - 2 || /^\d+$/.test(p));
}

const ELLIPSIS = '…';

// `name` in at most `room` characters. First whole dotted parts are left out, from the
// left, the distinguishing ones kept: model.layers.10.self_attn.q_proj.weight becomes
// "…layers.10.self_attn.q_proj.weight", "…10.self_attn.q_proj.weight", then
// "…10…q_proj.weight"; if that is still too long, characters go from the middle of what
// is left, keeping more of the end than of the start ("…10…weight").
export function shortenName(name, room) {
  if (name.length <= room) return name;
  const parts = name.split('.');
  const keep = kept(parts);
  // Leave out the droppable parts one at a time, left to right (a run becomes one "…").
  for (let i = 0; i < parts.length; i += 1) {
    if (keep[i]) continue;
    keep[i] = 'dropped';
    const text = joinKept(parts, keep);
    if (text.length <= room) return text;
  }
  return middleEllipsis(joinKept(parts, keep), room);
}

function joinKept(parts, keep) {
  const out = [];
  for (let i = 0; i < parts.length; i += 1) {
    if (keep[i] === 'dropped') {
      if (out[out.length - 1] !== ELLIPSIS) out.push(ELLIPSIS);
    } else {
      out.push(parts[i]);
    }
  }
  // "…" stands for whole parts: no dot between it and its neighbours.
  return out.join('.').replaceAll(`.${ELLIPSIS}.`, ELLIPSIS).replace(/^…\./, ELLIPSIS).replace(/\.…$/, ELLIPSIS);
}

// Two thirds of the room for the end, the rest for the start.
export function middleEllipsis(text, room) {
  if (text.length <= room) return text;
  if (room <= 1) return ELLIPSIS;
  const tail = Math.ceil((room - 1) * 2 / 3);
  const head = room - 1 - tail;
  return `${text.slice(0, head)}${ELLIPSIS}${text.slice(text.length - tail)}`;
}
