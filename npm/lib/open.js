// open(): resolve a source to files, declare them to a new Session and parse,
// serving need_bytes / need_files, until the core has the model.
import { AmnError, asIoError, throwIfAborted } from './errors.js';
import { FileTable, drive, supplyFirstRead } from './session.js';
import { Model } from './model.js';
import { blobFile, fetchWithHeaders, fileListSource, isUrl, memoryFile, urlSource, useCore } from './sources.js';

// Limits go to the core as given (camelCase, or ParseLimits' snake_case): it checks them
// and the first call that can fail (parse) reports a bad one.
export function limitsJson(limits) {
  if (limits === undefined || limits === null) return '{}';  // no JSON.stringify per open
  if (typeof limits !== 'object' || Array.isArray(limits)) {
    throw new AmnError('invalid_argument', 'open(): limits must be an object');
  }
  return JSON.stringify(limits);
}

// Sources every environment understands; `extra` (Node) handles paths and FileHandles.
// A value, or a promise where resolving takes I/O (a URL's first read, a folder's listing).
// `transport` (Node: lib/node-http.js) loads the fetch-shaped function URL reads use when
// options.fetch is not given; without one they use globalThis.fetch.
export function resolveSource(source, options, extra, transport = null) {
  const { name } = options;
  const single = (entry) => ({ entry, extras: [], find: async () => null });
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return single(memoryFile(source, name));
  if (typeof Blob !== 'undefined' && source instanceof Blob) return single(blobFile(source, name));
  if (Array.isArray(source) && source.length === 1 && source[0] instanceof Blob) return single(blobFile(source[0], name));
  if (Array.isArray(source)) return fileListSource(source);
  const url = source instanceof URL ? source : typeof source === 'string' && isUrl(source) ? new URL(source) : null;
  if (url && (url.protocol === 'http:' || url.protocol === 'https:')) {
    // Not globalThis.fetch unless it is used: in Node its first read loads undici.
    const own = !options.fetch && transport;
    const fetchFn = options.fetch || (own ? null : globalThis.fetch);
    if (!own && typeof fetchFn !== 'function') throw new AmnError('invalid_argument', 'open(): no fetch() available; pass options.fetch');
    let send = fetchFn;
    // Made (and bad headers or accessToken refused) before any I/O; `send` is set below.
    const withHeaders = fetchWithHeaders((u, init) => send(u, init), options);
    return Promise.all([import('./hub.js'), own ? transport() : fetchFn]).then(([{ hubRepo, hubSource }, f]) => {
      send = f;
      const hub = hubRepo(url, options.hubEndpoint);  // https://huggingface.co/ORG/REPO: a folder
      if (hub) return hubSource(hub, { fetch: withHeaders, signal: options.signal });
      return urlSource(url, { fetch: withHeaders, signal: options.signal, config: options.config !== false });
    });
  }
  const resolved = extra ? extra(source, options) : null;
  const refuse = () => new AmnError('invalid_argument', 'open(): source must be an ArrayBuffer, Uint8Array, Blob/File, array of Files or an http(s) URL'
    + (extra?.accepts || ''));
  if (resolved instanceof Promise) return resolved.then((r) => { if (!r) throw refuse(); return r; });
  if (resolved) return resolved;
  throw refuse();
}

export async function openModel(loadCore, source, options = {}, hooks) {
  const { signal } = options;
  throwIfAborted(signal);
  // Awaited only when it is a promise: a small header's whole open() is tens of µs, and
  // each needless await is a trip through the microtask queue.
  let M = loadCore();
  if (M instanceof Promise) M = await M;
  useCore(M);
  const limits = limitsJson(options.limits);
  let resolved = resolveSource(source, options, hooks.resolveExtra, hooks.transport);
  if (resolved instanceof Promise) resolved = await resolved;
  const session = new M.Session(limits);
  const files = new FileTable(session);
  try {
    supplyFirstRead(M, session, files, files.add(resolved.entry));
    for (const ref of resolved.extras) files.add(ref);
    // Shards the core names (from an index) are found beside the entry; a sibling
    // config.json follows them (the order the native CLI declares files in).
    let later = resolved.afterShards || null;
    const addLater = async () => {
      const refs = later ? await later() : [];
      later = null;
      for (const ref of refs) if (!files.has(ref.name)) files.add(ref);
      return refs.length > 0;
    };
    const onNeedFiles = async (names) => {
      const wanted = names.filter((n) => !files.has(n));
      if (wanted.length === 0) throw new AmnError('internal', `the core asked again for ${names.join(', ')}`);
      const refs = await Promise.all(wanted.map((n) => resolved.find(n).catch((e) => { throw asIoError(e, n, signal); })));
      refs.forEach((ref, i) => {
        if (!ref) throw new AmnError('io', resolved.missing ? resolved.missing(wanted[i]) : `shard ${wanted[i]} named by ${resolved.entry.name} is missing`);
        files.add(ref);
      });
      await addLater();
    };
    const parse = () => drive(M, session, files, () => session.parse(), { signal, onNeedFiles, what: 'parse' });
    await parse();
    if (later && await addLater()) await parse();  // an index that named no missing shard
    // Config files looked for only when needed (a path: resolved.lateConfigs): now, when
    // the core says they could change what it found (then it opens again with them),
    // else on the model's first use (model.js), which reads them as this open would have.
    let lateConfigs = resolved.lateConfigs || null;
    if (lateConfigs && session.configMatters()) {
      const refs = lateConfigs().filter((ref) => !files.has(ref.name));
      lateConfigs = null;
      for (const ref of refs) files.add(ref);
      if (refs.length > 0) await parse();
    }
    files.settle();
    session.releaseData();
    return new Model(M, session, files, hooks, lateConfigs);
  } catch (err) {
    session.delete();
    await files.close();
    await resolved.entry?.close?.();
    throw err;
  }
}
