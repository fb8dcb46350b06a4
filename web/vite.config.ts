// The dashboard's build: `npm run build:web` writes web/dist, which the service serves under /dashboard
// (src/surfaces/dashboard-web.ts); `npm run dev:web` serves the pages with hot reload against a service
// running on port 3000.
import react from '@vitejs/plugin-react';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/**
 * Writes a .br and a .gz beside each script and stylesheet, which the service sends to browsers that
 * accept them (@fastify/static's preCompressed): the service has no compression of its own, and
 * compressing once at build costs nothing per request. A few lines of node:zlib instead of a plugin.
 */
function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'precompress',
    apply: 'build',
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir);
    },
    async closeBundle() {
      const assets = join(outDir, 'assets');
      const names = (await readdir(assets)).filter((name) => /\.(js|css|svg)$/.test(name));
      await Promise.all(
        names.map(async (name) => {
          const content = await readFile(join(assets, name));
          if (content.length < 1024) return;
          const params = { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY };
          await writeFile(join(assets, `${name}.br`), await brotli(content, { params }));
          await writeFile(join(assets, `${name}.gz`), await gzipped(content, { level: 9 }));
        }),
      );
    },
  };
}

export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/',
  publicDir: false,
  plugins: [react(), precompress()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The browser tests hold the first load of the inbox under 300 KB of gzipped script (e2e/budget.spec.ts).
    chunkSizeWarningLimit: 700,
  },
  server: {
    proxy: {
      // The session API refuses a sign-in from another origin: the pages served here call it as if
      // they came from the service itself.
      '/dashboard/api': {
        target: 'http://127.0.0.1:3000',
        configure: (proxy) => proxy.on('proxyReq', (request) => request.setHeader('origin', 'http://127.0.0.1:3000')),
      },
    },
  },
});
