// `make serve`: serves the built page (web/dist) and the fixtures from one origin on
// 127.0.0.1, with real Content-Types and HTTP Range support (the page opens URLs with
// Range requests; `vite preview` mishandles suffix ranges, TOOLCHAIN.md quirk 12).
import { fileURLToPath } from 'node:url';
import { startPageServer } from '../tests_js/support/page-server.js';

const at = (p) => fileURLToPath(new URL(p, import.meta.url));
const port = Number(process.env.PORT ?? 8080);
const server = await startPageServer({ mounts: { '/': at('../web/dist/'), '/fixtures/': at('../fixtures/') }, port });
console.log(`anamnesis page:  ${server.url}`);
console.log(`a model by URL:  ${server.url}fixtures/models/tiny-mlp/model.safetensors`);
console.log('Ctrl-C stops the server.');
