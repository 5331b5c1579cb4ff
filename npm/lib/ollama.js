// `ollama:<name>` sources (Node only): the file system half of the core's resolver
// (src/session/ollama.h holds every rule and message, and cites the parts of
// ollama/ollama they follow). Each step names a path to examine (and, for the manifest,
// to read); the native CLI's src/cli/ollama.cpp is the same loop.
import { readFile, stat } from 'node:fs/promises';
import { ollamaStep } from './sources.js';

// The C library's wording for what stat/read report, as the native CLI prints it.
const why = (err) => ({ EACCES: 'Permission denied', EPERM: 'Operation not permitted', EIO: 'Input/output error',
  ELOOP: 'Too many levels of symbolic links', ENAMETOOLONG: 'File name too long' }[err?.code] || err?.message || String(err));

async function probe(path, read, maxBytes) {
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    if (err?.code === 'ENOENT' || err?.code === 'ENOTDIR') return { probe: { isFile: false, size: 0 } };
    return { probe: { isFile: false, size: 0, error: why(err) } };
  }
  const out = { probe: { isFile: st.isFile(), size: st.size } };
  if (!read || !st.isFile() || st.size > maxBytes) return out;
  try {
    out.bytes = await readFile(path);
  } catch (err) {
    out.probe.error = why(err);
  }
  return out;
}

// spec "ollama:[host/][namespace/]model[:tag]" → { blob, stem, modelsDir }.
export async function resolveOllama(spec, env = process.env) {
  const facts = {
    spec,
    modelsEnv: env.OLLAMA_MODELS ?? null,
    home: (process.platform === 'win32' ? env.USERPROFILE : env.HOME) ?? null,
    probes: {},
    hasManifest: false,
  };
  let manifest = new Uint8Array(0);
  for (;;) {
    const step = ollamaStep(facts, manifest);
    if (!step.probe) return { blob: step.blob, stem: step.stem, modelsDir: step.modelsDir };
    const found = await probe(step.probe, step.read, step.maxBytes);
    facts.probes[step.probe] = found.probe;
    if (found.bytes) {
      manifest = found.bytes;
      facts.hasManifest = true;
    }
  }
}
