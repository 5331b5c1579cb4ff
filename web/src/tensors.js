// What the page lists as tensors: every stored record, except that a quantized weight's
// parts (qweight, scales, absmax, ...) appear once, as the logical tensor they encode,
// where its first part is stored — as `amn inspect` lists them. No DOM here.

export function displayTensors(info) {
  const logical = new Map((info.logical ?? []).map((l) => [l.name, l]));
  const out = [];
  const shown = new Set();
  for (const t of info.tensors) {
    if (t.part_of === undefined) {
      out.push({ ...t, scheme: '' });
      continue;
    }
    if (t.part_of === null || shown.has(t.part_of)) continue; // an activation scale, or a later part
    const l = logical.get(t.part_of);
    if (!l) continue;
    shown.add(l.name);
    // The dtype column names the scheme (as `amn inspect` does: "bnb-nf4", not the U8 its
    // codes are stored in); the stored dtype of the part that holds the values stays beside.
    const main = info.tensors.find((r) => r.name === (l.parts.weight ?? l.parts.qweight ?? Object.values(l.parts)[0]));
    out.push({
      name: l.name, dtype: l.scheme, storedDtype: main?.dtype ?? '', shape: l.shape, parameters: l.parameters, nbytes: l.stored_bytes,
      scheme: l.scheme, variant: l.variant, bitsPerWeight: l.bits_per_weight, naturalDtype: l.dtype,
      parts: l.parts, error: l.error,
    });
  }
  return out;
}
