// Node only: a sharded output as one atomic unit, like the native CLI's OutputFolder
// (src/cli/output_folder.cpp). The shards and the index are written into a temporary
// folder beside the target, each file fsynced (pathSink), and the folder is renamed into
// place only after the last one is in it. An error or an abort leaves nothing at the
// target. With `sync: false` the same steps run without any fsync (scratch outputs).
// Missing parent folders are created (`sink: 'out/llama-bf16'` works without `out/`);
// they stay if the conversion fails.
// Loaded by lib/model.js only when a folder path is the sink.
import { mkdir, mkdtemp, open as openFile, rename, rm, stat, chmod } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AmnError, asIoError } from './errors.js';
import { pathSink } from './node-io.js';

const existsError = (dest) => new AmnError('exists', `${dest} already exists (pass { overwrite: true } to replace it)`);
const present = async (path) => (await stat(path).catch(() => null)) !== null;

// The folders whose entries changed when mkdir created `created` .. `parent`: each
// created folder's own parent.
function createdParents(created, parent) {
  if (!created) return [];
  const out = [];
  for (let dir = parent; dir.length >= created.length; dir = dirname(dir)) out.push(dirname(dir));
  return out;
}

async function syncDir(dir) {
  try {
    const fh = await openFile(dir, 'r');
    await fh.sync().finally(() => fh.close());
  } catch { /* best effort: not every platform lets a folder be fsynced */ }
}

export async function openFolder(target, { overwrite = false, sync = true } = {}) {
  const shown = target instanceof URL ? fileURLToPath(target) : String(target);
  const dest = resolve(shown);
  if (!overwrite && await present(dest)) throw existsError(shown);
  const parent = dirname(dest);
  let tmp;
  let created;  // the first parent folder mkdir made, if any
  try {
    created = await mkdir(parent, { recursive: true });
    tmp = await mkdtemp(join(parent, `.amn-tmp-${basename(dest)}-`));
    await chmod(tmp, 0o755);  // mkdtemp makes it 0700; a model folder is readable like a file
  } catch (err) {
    throw asIoError(err, `cannot create a folder in ${dirname(shown)}`);
  }
  let done = false;
  return {
    // Each file is itself written to a temporary name and linked in when complete.
    open: (name) => pathSink(join(tmp, name), { overwrite: false, sync }),
    async commit() {
      if (sync) await syncDir(tmp);
      try {
        if (!await present(dest)) {
          await rename(tmp, dest);
        } else if (!overwrite) {
          throw existsError(shown);
        } else {
          // Node has no renameat2 exchange: move the old folder aside, then put ours in.
          const aside = `${tmp}-old`;
          await rename(dest, aside);
          try {
            await rename(tmp, dest);
          } catch (err) {
            await rename(aside, dest).catch(() => {});
            throw err;
          }
          done = true;
          if (sync) await syncDir(parent);
          await rm(aside, { recursive: true, force: true });
          return shown;
        }
      } catch (err) {
        throw err instanceof AmnError ? err : asIoError(err, `cannot move the output into place at ${shown}`);
      }
      done = true;
      if (sync) for (const dir of [parent, ...createdParents(created, parent)]) await syncDir(dir);
      return shown;
    },
    async abort() {
      if (!done) await rm(tmp, { recursive: true, force: true });
    },
  };
}
