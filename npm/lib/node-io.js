// Node-only sources and sinks: paths (files and folders), FileHandles, path sinks
// written atomically, and Node Writables. Reads are positional on a FileHandle, so
// inspecting a model never reads more than the core asks for.
import { open as openFile, readdir, rename, link, unlink, rm } from 'node:fs/promises';
import { closeSync, openSync, read as readCallback, readSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { finished } from 'node:stream/promises';
import { AmnError, asIoError, throwIfAborted } from './errors.js';
import { chooseFiles, configFileNames, entryIsIndex, isOllamaSpec, noModelFiles } from './sources.js';
import { isWritableStream, openCommonSink, partsSink, toUint8Array } from './sinks.js';

function ioError(err, path) {
  if (err instanceof AmnError) return err;
  if (err?.code === 'ENOENT') return new AmnError('io', `cannot open ${path}: no such file or folder`, { cause: err });
  if (err?.code === 'EACCES' || err?.code === 'EPERM') return new AmnError('io', `${path}: permission denied`, { cause: err });
  return asIoError(err, path);
}

// The C library's wording, so the Node CLI's error lines read like the native ones.
const STRERROR = {
  ENOENT: 'No such file or directory', EACCES: 'Permission denied', EPERM: 'Operation not permitted',
  ENOSPC: 'No space left on device', EDQUOT: 'Disk quota exceeded', EROFS: 'Read-only file system',
  EEXIST: 'File exists', EISDIR: 'Is a directory', ENOTDIR: 'Not a directory', EIO: 'Input/output error',
  EXDEV: 'Invalid cross-device link', EMFILE: 'Too many open files', EFBIG: 'File too large',
};
const strerror = (err) => STRERROR[err?.code] || err?.message || String(err);
const writeError = (what, err) => (err instanceof AmnError ? err : new AmnError('io', `${what}: ${strerror(err)}`, { cause: err }));

// Reads up to this size are synchronous preads on the handle's fd. Parsing asks for many
// small ranges (a .pth's 320 ZIP local headers, one NPY header per .npz entry); each
// FileHandle.read is a trip through libuv's thread pool (tens of µs, more on a loaded
// machine), while a small pread from the page cache blocks the event loop for a few µs.
// For the same reason a path's stats, open and close are synchronous: open() of one file
// makes about six such calls (the file, the config files that may lie beside it), which
// cost more than parsing a small header when each is a trip through the pool.
const SYNC_READ_MAX = 64 * 1024;
// fs.read as a promise of { bytesRead }, like FileHandle.read. Not util.promisify: importing
// node:util from an ES module loads every module behind its getters (parseArgs, MIMEType).
const readAsync = (fd, buf, at, length, position) => new Promise((resolve, reject) => {
  readCallback(fd, buf, at, length, position, (err, bytesRead) => (err ? reject(err) : resolve({ bytesRead })));
});

async function readFully(fh, offset, length, label, signal) {
  const buf = new Uint8Array(length);
  let got = 0;
  const sync = length <= SYNC_READ_MAX;
  while (got < length) {
    throwIfAborted(signal);
    let bytesRead;
    try {
      if (sync) bytesRead = readSync(fh.fd, buf, got, length - got, offset + got);
      else ({ bytesRead } = await (fh.read ? fh.read(buf, got, length - got, offset + got)
        : readAsync(fh.fd, buf, got, length - got, offset + got)));
    } catch (err) {
      throw ioError(err, label);
    }
    if (bytesRead === 0) throw new AmnError('io', `${label}: short read (file shrank?) at ${offset + got}`, { offset: offset + got });
    got += bytesRead;
  }
  return buf;
}

// A file by path; the descriptor opens on the first read and closes with the model.
function pathFile(path, size) {
  let fd = null;
  const fdNow = () => {
    if (fd === null) {
      try {
        fd = openSync(path, 'r');
      } catch (err) {
        throw ioError(err, path);
      }
    }
    return fd;
  };
  return {
    name: basename(path),
    size,
    path,
    async read(offset, length, signal) {
      return readFully({ fd: fdNow() }, offset, length, path, signal);
    },
    // session.js reads ranges up to syncReadMax with readSyncInto: synchronously, straight
    // into WASM memory (`target` is its HEAPU8), so opening a small header makes no promise,
    // no buffer and no copy of its own.
    syncReadMax: SYNC_READ_MAX,
    readSyncInto(offset, length, target, at) {
      const f = fdNow();
      for (let got = 0; got < length;) {
        let n;
        try {
          n = readSync(f, target, at + got, length - got, offset + got);
        } catch (err) {
          throw ioError(err, path);
        }
        if (n === 0) throw new AmnError('io', `${path}: short read (file shrank?) at ${offset + got}`, { offset: offset + got });
        got += n;
      }
    },
    close() {
      const f = fd;
      fd = null;
      if (f !== null) closeSync(f);
    },
  };
}

function statPath(path, optional = false) {
  try {
    return statSync(path, { throwIfNoEntry: !optional }) ?? null;
  } catch (err) {
    throw ioError(err, path);
  }
}

function pathFileIfExists(path) {
  const st = statPath(path, true);
  return st && st.isFile() ? pathFile(path, st.size) : null;
}

// A config file beside a model, read synchronously whatever its size: the model reads it
// on first use (open.js lateConfigs), maybe inside a synchronous getter (`info`).
function configFileIfExists(path) {
  const file = pathFileIfExists(path);
  if (file) file.syncReadMax = Infinity;
  return file;
}

// A file, a folder or an index, with the files the native CLI adds (local_files.cpp), in
// its order: the entry, shards (a folder's, or those an index names), then the config
// files beside it (configFileNames(): the core's list). A file's source is made
// synchronously; its config files are looked for only when needed (`lateConfigs`, called
// by open.js when the core says they could change the open, else on the model's first
// use): their three stats cost more than opening a small header. A folder's listing is
// awaited, and names its config files.
function pathSource(path) {
  const st = statPath(path);
  if (st.isDirectory()) return folderSource(path);
  const folder = dirname(path);
  const name = basename(path);
  const source = sourceOf(folder, pathFile(path, st.size), [], []);
  source.lateConfigs = () => configFileNames().filter((n) => n !== name).map((n) => configFileIfExists(join(folder, n))).filter(Boolean);
  return source;
}

async function folderSource(path) {
  let names;
  try {
    names = (await readdir(path, { withFileTypes: true })).filter((d) => d.isFile()).map((d) => d.name);
  } catch (err) {
    throw ioError(err, path);
  }
  const choice = chooseFiles(names);
  if (!choice) throw noModelFiles(path);
  const ref = (n) => pathFileIfExists(join(path, n));
  return sourceOf(path, ref(choice.entry), choice.shards.map(ref), choice.configs.map(ref));
}

function sourceOf(folder, entry, shards, found) {
  const configs = found.filter(Boolean);
  const viaIndex = entryIsIndex(entry.name);
  return {
    entry,
    extras: viaIndex ? [] : [...shards.filter(Boolean), ...configs],
    afterShards: viaIndex ? async () => configs : null,
    find: async (n) => pathFileIfExists(join(folder, n)),
    missing: (n) => `shard ${n} named by ${entry.name} is missing from ${folder}`,
  };
}

const isFileHandle = (x) => x && typeof x === 'object' && typeof x.fd === 'number' && typeof x.stat === 'function' && typeof x.read === 'function';

// The caller's FileHandle: read it, never close it.
async function handleSource(fh, name) {
  const st = await fh.stat();
  const label = name || `fd ${fh.fd}`;
  return {
    entry: { name: name || 'model', size: st.size, read: (o, l, s) => readFully(fh, o, l, label, s) },
    extras: [],
    find: async () => null,
  };
}

// A value, or a promise where finding the files takes I/O that is not synchronous.
export function resolveNodeSource(source, { name }) {
  // ollama.js (and the other modules only some sources or verbs need: hub.js, diff.js) load
  // when first used: each module a cold `npx amn inspect` imports costs it ~0.5 ms.
  if (isOllamaSpec(source)) return import('./ollama.js').then(({ resolveOllama }) => resolveOllama(source)).then(({ blob }) => pathSource(blob));
  if (typeof source === 'string') return pathSource(source);
  if (source instanceof URL && source.protocol === 'file:') return pathSource(fileURLToPath(source));
  if (isFileHandle(source)) return handleSource(source, name);
  return null;
}
resolveNodeSource.accepts = ', a path or a FileHandle';

// ---- sinks ------------------------------------------------------------------------

async function exists(path) {
  return statPath(path, true) !== null;
}

// Moves the finished temp file into place. Without overwrite, link() is an atomic
// "create only if absent"; file systems without hard links fall back to rename.
async function place(tmp, dest, overwrite) {
  if (overwrite) return rename(tmp, dest);
  try {
    await link(tmp, dest);
    await unlink(tmp);
  } catch (err) {
    if (err?.code === 'EEXIST' || await exists(dest)) throw existsError(dest);
    await rename(tmp, dest);
  }
}

const existsError = (dest) => new AmnError('exists', `${dest} already exists (pass { overwrite: true } to replace it)`);

async function syncDir(dir) {
  // Makes the rename itself durable; not every platform lets a directory be fsynced.
  try {
    const fh = await openFile(dir, 'r');
    await fh.sync().finally(() => fh.close());
  } catch { /* best effort */ }
}

// `sync: false` (convert's option, the CLI's --no-sync) skips both fsyncs; the temporary
// name and the link/rename into place stay.
export async function pathSink(destPath, { overwrite = false, sync = true } = {}) {
  const dest = resolve(destPath);
  if (!overwrite && await exists(dest)) throw existsError(destPath);
  const dir = dirname(dest);
  // node:crypto loads here, not with the module: importing it costs a cold `npx amn inspect`
  // ~20 ms, and only writing needs it.
  const { randomBytes } = await import('node:crypto');
  const tmp = join(dir, `.amn-tmp-${process.pid}-${randomBytes(4).toString('hex')}-${basename(dest)}`);
  let fh;
  try {
    fh = await openFile(tmp, 'wx', 0o644);
  } catch (err) {
    throw writeError(`cannot create a file in ${dirname(destPath)}`, err);
  }
  let bytes = 0;
  let closed = false;
  return {
    async write(chunk) {
      try {
        for (let off = 0; off < chunk.byteLength;) {
          const { bytesWritten } = await fh.write(chunk, off, chunk.byteLength - off);
          off += bytesWritten;
        }
      } catch (err) {
        throw writeError(`cannot write ${destPath}`, err);
      }
      bytes += chunk.byteLength;
    },
    async close() {
      try {
        if (sync) await fh.sync();  // the data is on disk before the name appears
      } catch (err) {
        throw writeError(`cannot flush ${destPath}`, err);
      }
      closed = true;
      await fh.close();
      try {
        await place(tmp, dest, overwrite);
      } catch (err) {
        throw writeError(`cannot move the output into place at ${destPath}`, err);
      }
      if (sync) await syncDir(dir);
      return { bytes, path: destPath };
    },
    async abort() {
      if (!closed) await fh.close().catch(() => {});
      closed = true;
      await rm(tmp, { force: true });
    },
  };
}

const isNodeWritable = (x) => x && typeof x.write === 'function' && typeof x.end === 'function' && typeof x.once === 'function';

export function writableSink(w) {
  let bytes = 0;
  let failure = null;
  const onError = (err) => { failure ||= err; };
  w.on('error', onError);
  const check = () => { if (failure) throw asIoError(failure, 'writing the output stream'); };
  return {
    async write(chunk) {
      check();
      bytes += chunk.byteLength;
      if (!w.write(chunk)) {
        await new Promise((res) => {
          const done = () => { w.off('drain', done); w.off('error', done); w.off('close', done); res(); };
          w.on('drain', done); w.on('error', done); w.on('close', done);
        });
      }
      check();
    },
    async close() {
      w.end();
      try { await finished(w); } catch (err) { throw asIoError(err, 'writing the output stream'); }
      w.off('error', onError);
      return { bytes };
    },
    async abort() {
      w.off('error', onError);
      // Never destroy the process's own stdout/stderr.
      if (w !== process.stdout && w !== process.stderr) w.destroy();
    },
  };
}

export async function openNodeSink(sink, options) {
  if (typeof sink === 'string') return pathSink(sink, options);
  if (sink instanceof URL && sink.protocol === 'file:') return pathSink(fileURLToPath(sink), options);
  if (sink && !isWritableStream(sink) && isNodeWritable(sink)) return writableSink(sink);
  return openCommonSink(sink, () => partsSink(toUint8Array));
}

// A whole (small) file from a path or file: URL, as the native CLI reads --imatrix: its
// error lines name the path with the C library's wording.
export async function readNodeFile(path) {
  const p = path instanceof URL ? fileURLToPath(path) : String(path);
  const { readFile } = await import('node:fs/promises');
  try {
    return new Uint8Array(await readFile(p));
  } catch (err) {
    throw new AmnError('io', `cannot open ${p}: ${strerror(err)}`, { cause: err });
  }
}
