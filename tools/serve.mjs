// `make serve`: serves the built page and the fixtures on 127.0.0.1 with HTTP Range
// support (the page opens URLs with Range requests; `vite preview` mishandles suffix
// ranges, TOOLCHAIN.md quirk 12). Serves the repository folder, loopback only.
import { fileURLToPath } from 'node:url';
import { startRangeServer } from '../tests_js/support/range-server.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const port = Number(process.env.PORT ?? 8080);
const server = await startRangeServer({ root, port });
console.log(`anamnesis page:   ${server.url}web/dist/`);
console.log(`a model by URL:   ${server.url}fixtures/models/tiny-mlp/model.safetensors`);
console.log('Ctrl-C stops the server.');
