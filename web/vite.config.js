// The page is a static site: `npx vite build web` writes web/dist with relative URLs, so
// the folder can be served from anywhere (or opened through any static server).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const repo = fileURLToPath(new URL('..', import.meta.url));

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  resolve: {
    // The npm package from this repository (npm/), not a published copy.
    alias: { anamnesis: fileURLToPath(new URL('../npm/index.js', import.meta.url)) },
  },
  worker: { format: 'es' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The .wasm is fetched by URL (instantiateStreaming); never inline it.
    assetsInlineLimit: (file) => (file.endsWith('.wasm') ? false : undefined),
  },
  server: { fs: { allow: [repo] } },
  preview: { port: 4173 },
});
