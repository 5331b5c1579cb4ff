// diff(a, b): two models compared tensor by tensor by the core (report/model_diff.h), each
// side read piece by piece through its own session. A side given as a source is opened
// here and closed afterwards; an open Model is left open.
import { DIFF_RAW, Model } from './model.js';

export async function diffModels(open, a, b, { limits, signal, onProgress, text = false, exactNames = false } = {}) {
  const opened = [];
  const side = async (x) => {
    if (x instanceof Model) return x;
    const m = await open(x, { limits });
    opened.push(m);
    return m;
  };
  try {
    const ma = await side(a);
    const mb = await side(b);
    const raw = await ma[DIFF_RAW](mb, { signal, onProgress, exactNames });
    const out = JSON.parse(raw.json);
    if (text) out.text = raw.text;
    return out;
  } finally {
    await Promise.all(opened.map((m) => m.close()));
  }
}
