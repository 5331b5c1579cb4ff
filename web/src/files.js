// Turning what the user dropped or picked into a list of Files for the package, which
// finds the entry (a *.index.json, or the one tensor file) among them by name.
//
// A folder contributes the files directly inside it: a model directory may hold
// unrelated subfolders (e.g. `original/`), and hidden entries (.git, .cache) are skipped.

function isHidden(name) {
  return name.startsWith('.');
}

// From a webkitdirectory <input>: keep files at the top of the chosen folder.
export function filesFromFolderInput(fileList) {
  return [...fileList].filter((file) => {
    const parts = (file.webkitRelativePath || file.name).split('/');
    return parts.length <= 2 && !isHidden(parts[parts.length - 1]);
  });
}

// From a drop event. Entries must be taken synchronously, inside the event handler.
export function entriesFromDrop(dataTransfer) {
  const items = [...(dataTransfer.items ?? [])].filter((item) => item.kind === 'file');
  if (items.length === 0 || typeof items[0].webkitGetAsEntry !== 'function') {
    return { files: [...dataTransfer.files] };
  }
  const entries = items.map((item) => item.webkitGetAsEntry());
  // Synthetic drops (and some browsers) give items without entries: use the plain files.
  if (entries.some((entry) => !entry)) return { files: [...dataTransfer.files] };
  return { entries };
}

export async function filesFromDrop({ files, entries }) {
  if (files) return files;
  const out = [];
  for (const entry of entries) {
    if (entry.isFile) {
      out.push(await fileOf(entry));
    } else if (entry.isDirectory) {
      for (const child of await readDirectory(entry)) {
        if (child.isFile && !isHidden(child.name)) out.push(await fileOf(child));
      }
    }
  }
  return out;
}

function fileOf(entry) {
  return new Promise((resolve, reject) => entry.file(resolve, reject));
}

// readEntries answers in batches; an empty batch ends the listing.
async function readDirectory(directory) {
  const reader = directory.createReader();
  const all = [];
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (batch.length === 0) return all;
    all.push(...batch);
  }
}
