// `ollama:<name>` sources (Node only): a model pulled by Ollama, found through its local
// manifest and opened as the GGUF blob the manifest names. The same rules and messages as
// the native CLI's src/cli/ollama.cpp, which cites the parts of ollama/ollama they follow:
// models folder $OLLAMA_MODELS or ~/.ollama/models (envconfig/config.go); names
// "[host/][namespace/]model[:tag]" checked as types/model/name.go does, plus no ".."
// anywhere; manifest <models>/manifests/<host>/<namespace>/<model>/<tag>; the last layer
// with mediaType application/vnd.ollama.image.model (server/images.go GetModel); its digest
// sha256:<64 hex> (manifest/paths.go BlobsPath); blob <models>/blobs/sha256-<hex>, or the
// pre-2024 sha256:<hex> (server/fixblobs.go).
import { readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { AmnError } from './errors.js';

export const OLLAMA_PREFIX = 'ollama:';
const DEFAULT_HOST = 'registry.ollama.ai';
const DEFAULT_NAMESPACE = 'library';
const DEFAULT_TAG = 'latest';
const MODEL_MEDIA_TYPE = 'application/vnd.ollama.image.model';
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export const isOllamaSpec = (s) => typeof s === 'string' && s.startsWith(OLLAMA_PREFIX);

const ALLOWED = {
  host: "letters, digits, '_', '-', '.' and ':'",
  namespace: "letters, digits, '_' and '-'",
  model: "letters, digits, '_', '-' and '.'",
  tag: "letters, digits, '_', '-' and '.'",
};
const isAlnumUnderscore = (c) => /^[A-Za-z0-9_]$/.test(c);

function partProblem(kind, s) {
  if (s === '') return `the ${kind} is empty`;
  const max = kind === 'host' ? 350 : 80;
  // Byte length, as Go's len() counts; any non-ASCII byte fails the check below anyway.
  if (Buffer.byteLength(s) > max) return `the ${kind} is longer than ${max} characters`;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    let ok = isAlnumUnderscore(c);
    if (i > 0) ok ||= c === '-' || (c === '.' && kind !== 'namespace') || (c === ':' && kind === 'host');
    if (!ok) {
      return `the ${kind} "${s}" ${i === 0 ? "must start with a letter, digit or '_'" : 'holds a character Ollama does not allow'}`
        + ` (${ALLOWED[kind]})`;
    }
  }
  return '';
}

const nameError = (name, why) => new AmnError('parse',
  `invalid Ollama model name "${name}": ${why}; expected [host/][namespace/]model[:tag]`);

export function parseOllamaName(name) {
  if (name === '') throw nameError(name, 'the name is empty');
  if (name.includes('..')) throw nameError(name, '".." is not allowed');
  const n = { host: DEFAULT_HOST, namespace: DEFAULT_NAMESPACE, model: '', tag: DEFAULT_TAG };
  let s = name;
  const colon = s.lastIndexOf(':');
  if (colon >= 0 && colon > s.lastIndexOf('/')) {
    n.tag = s.slice(colon + 1);
    s = s.slice(0, colon);
  }
  let cut = s.lastIndexOf('/');
  if (cut < 0) {
    n.model = s;
  } else {
    n.model = s.slice(cut + 1);
    s = s.slice(0, cut);
    cut = s.lastIndexOf('/');
    if (cut < 0) {
      n.namespace = s;
    } else {
      n.namespace = s.slice(cut + 1);
      n.host = s.slice(0, cut);  // a '/' left in it fails the check below
    }
  }
  for (const kind of ['host', 'namespace', 'model', 'tag']) {
    const why = partProblem(kind, n[kind]);
    if (why) throw nameError(name, why);
  }
  return n;
}

// fs::path's operator/ (what the native CLI prints): one '/' between parts, nothing normalised.
const under = (dir, ...parts) => parts.reduce((p, part) => (p.endsWith('/') ? p + part : `${p}/${part}`), dir);

// Go's strings.Trim(strings.TrimSpace(v), "\"'") (envconfig.Var), for ASCII space.
const trimEnv = (v) => v.replace(/^[ \t\n\v\f\r]+|[ \t\n\v\f\r]+$/g, '').replace(/^["']+|["']+$/g, '');

export function ollamaModelsDir(env = process.env) {
  const dir = trimEnv(env.OLLAMA_MODELS ?? '');
  if (dir) return dir;
  const home = process.platform === 'win32' ? env.USERPROFILE : env.HOME;
  if (!home) throw new AmnError('io', "cannot locate Ollama's models folder: set OLLAMA_MODELS (or HOME)");
  return under(home, '.ollama', 'models');
}

const pullHint = (name) => `; run \`ollama pull ${name}\``;

async function regularFile(path) {
  try {
    return (await stat(path)).isFile();
  } catch (err) {
    if (err?.code === 'ENOENT' || err?.code === 'ENOTDIR') return false;
    throw new AmnError('io', `cannot read ${path}: ${err?.message || err}`, { cause: err });
  }
}

function modelDigest(bytes, where) {
  const bad = (why) => new AmnError('parse', `${where}: not an Ollama manifest: ${why}`);
  let root;
  try {
    // As simdjson reads it (the native side): valid UTF-8, a byte-order mark skipped.
    root = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw bad('not valid JSON');
  }
  if (root === null || typeof root !== 'object' || Array.isArray(root)) throw bad('not a JSON object');
  const layers = root.layers;
  if (layers === undefined || layers === null) return '';  // Go decodes a missing field as no layers
  if (!Array.isArray(layers)) throw bad('"layers" is not an array');
  let digest = '';
  for (const layer of layers) {
    if (layer === null || typeof layer !== 'object' || Array.isArray(layer)) throw bad('a layer is not an object');
    const mt = layer.mediaType;
    if (mt !== undefined && mt !== null && typeof mt !== 'string') throw bad('a layer\'s "mediaType" is not a string');
    if (mt !== MODEL_MEDIA_TYPE) continue;
    const d = layer.digest;
    if (typeof d !== 'string') throw bad('the model layer has no "digest" string');
    if (!/^sha256[:-][0-9a-fA-F]{64}$/.test(d)) throw bad(`the model layer's digest "${d}" is not sha256:<64 hex digits>`);
    digest = d;  // the last model layer wins, as in Ollama's GetModel
  }
  return digest;
}

// spec "ollama:[host/][namespace/]model[:tag]" → { blob, stem, modelsDir }.
export async function resolveOllama(spec, env = process.env) {
  if (!isOllamaSpec(spec)) throw new AmnError('invalid_argument', `${spec} is not an ollama: name`);
  const name = spec.slice(OLLAMA_PREFIX.length);
  const n = parseOllamaName(name);
  const dir = ollamaModelsDir(env);
  const manifest = under(dir, 'manifests', n.host, n.namespace, n.model, n.tag);
  if (!await regularFile(manifest)) throw new AmnError('not_found', `Ollama model ${name} not found in ${dir}${pullHint(name)}`);
  let bytes;
  try {
    const st = await stat(manifest);
    if (st.size > MAX_MANIFEST_BYTES) {
      throw new AmnError('limit', `${manifest}: an Ollama manifest of ${st.size} bytes is larger than ${MAX_MANIFEST_BYTES}`);
    }
    bytes = await readFile(manifest);
  } catch (err) {
    if (err instanceof AmnError) throw err;
    throw new AmnError('io', `cannot read ${manifest}: ${err?.message || err}`, { cause: err });
  }
  const digest = modelDigest(bytes, manifest);
  if (!digest) {
    throw new AmnError('unsupported', `Ollama model ${name} has no GGUF weights (no ${MODEL_MEDIA_TYPE} layer in ${manifest}): `
      + 'a cloud model, or one stored as tensor layers');
  }
  const hex = digest.slice(7);
  const blobs = under(dir, 'blobs');
  let blob = under(blobs, `sha256-${hex}`);
  if (!await regularFile(blob)) {
    const older = under(blobs, `sha256:${hex}`);
    if (!await regularFile(older)) {
      throw new AmnError('not_found', `the weights of Ollama model ${name} (blob sha256-${hex}) not found in ${blobs}${pullHint(name)}`);
    }
    blob = older;
  }
  return { blob, stem: `${n.model}-${n.tag}`, modelsDir: dir };
}
