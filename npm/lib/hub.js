// A Hugging Face repository URL (https://huggingface.co/ORG/REPO, or …/ORG/REPO/tree/REV)
// opened as a folder: the Hub's API lists the repository's files, the core's folder rule
// (chooseFiles) picks the model among them, and each file is read with HTTP Range from
// …/ORG/REPO/resolve/REV/NAME. Shards and config files come from the listing, so nothing
// is probed. `hubEndpoint` points elsewhere (a mirror, or the tests' fake of the API).
import { AmnError } from './errors.js';
import { chooseFiles, noModelFiles, request, urlFile } from './sources.js';

export const HUB_ENDPOINT = 'https://huggingface.co';

// First path parts that are the Hub's own pages, not organisations.
const NOT_ORGS = new Set(['api', 'datasets', 'spaces', 'docs', 'blog', 'models', 'settings', 'join', 'login',
  'organizations', 'collections', 'papers', 'pricing', 'tasks', 'new']);

// { endpoint, repo, revision } for a repository URL on the endpoint, else null.
export function hubRepo(url, endpoint = HUB_ENDPOINT) {
  let base;
  try { base = new URL(endpoint); } catch { throw new AmnError('invalid_argument', `open(): hubEndpoint is not a URL: ${endpoint}`); }
  if (url.origin !== base.origin || url.search || url.hash) return null;
  const prefix = base.pathname.replace(/\/+$/, '');
  if (!url.pathname.startsWith(`${prefix}/`)) return null;
  let parts;
  try {
    parts = url.pathname.slice(prefix.length).split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return null;
  }
  const plain = parts.length === 2;
  const tree = parts.length === 4 && parts[2] === 'tree';
  if (!(plain || tree) || NOT_ORGS.has(parts[0])) return null;
  return { endpoint: `${base.origin}${prefix}`, repo: `${parts[0]}/${parts[1]}`, revision: tree ? parts[3] : 'main' };
}

const repoPath = (repo) => repo.split('/').map(encodeURIComponent).join('/');

async function listFiles(hub, fetchFn, signal) {
  const api = `${hub.endpoint}/api/models/${repoPath(hub.repo)}/revision/${encodeURIComponent(hub.revision)}`;
  const res = await request(fetchFn, api, {}, signal);
  const what = `${hub.repo}${hub.revision === 'main' ? '' : ` at ${hub.revision}`}`;
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    throw new AmnError('io', `${what}: HTTP ${res.status} from ${api}: the repository is gated or private; pass accessToken`);
  }
  if (res.status === 404) {
    await res.body?.cancel();
    throw new AmnError('not_found', `${what}: no such model repository (HTTP 404 from ${api})`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new AmnError('io', `${api}: HTTP ${res.status} ${res.statusText}`.trim());
  }
  let listing;
  try {
    listing = await res.json();
  } catch (err) {
    throw new AmnError('io', `${api}: not the Hub's JSON (${err.message})`, { cause: err });
  }
  if (!Array.isArray(listing?.siblings)) throw new AmnError('io', `${api}: the answer lists no files (no "siblings")`);
  // A folder's rule: the files at its top (subfolders such as original/ are other things).
  return listing.siblings.map((s) => s?.rfilename).filter((n) => typeof n === 'string' && !n.includes('/'));
}

export async function hubSource(hub, { fetch: fetchFn, signal }) {
  const names = await listFiles(hub, fetchFn, signal);
  const choice = chooseFiles(names);
  if (!choice) throw noModelFiles(`${hub.endpoint}/${hub.repo}`);
  const present = new Set(names);
  const fileUrl = (n) => new URL(`${hub.endpoint}/${repoPath(hub.repo)}/resolve/${encodeURIComponent(hub.revision)}/${encodeURIComponent(n)}`);
  const file = (n) => urlFile(fileUrl(n), { fetch: fetchFn, signal });
  const [entry, ...extras] = await Promise.all(
    [choice.entry, ...(choice.viaIndex ? [] : [...choice.shards, ...choice.configs])].map(file));
  return {
    entry,
    extras,
    afterShards: async () => (choice.viaIndex ? Promise.all(choice.configs.map(file)) : []),
    find: async (n) => (present.has(n) ? file(n) : null),
    missing: (n) => `shard ${n} named by ${choice.entry} is not among the files of ${hub.repo}`,
  };
}
