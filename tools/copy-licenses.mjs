// npm's prepack step for npm/: the licence files live once, at the repository root, and
// npm packs only what is inside the package folder, so they are copied in at pack time
// (npm/LICENSE-* are ignored by git). tests_js/node/package.test.mjs checks the tarball.
import { copyFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
for (const name of ['LICENSE-MIT', 'LICENSE-APACHE']) {
  copyFileSync(fileURLToPath(new URL(name, root)), fileURLToPath(new URL(`npm/${name}`, root)));
}
