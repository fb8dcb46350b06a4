// Bundles the service and its command-line tools into dist/ (what `npm start` runs).
// Each file is written under a temporary name and renamed into place, so a process starting
// while another build runs (npm start, the sync tool and the tests all build first) never reads a
// half-written file; esbuild's own writer overwrites in place.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import process from 'node:process';
import { build } from 'esbuild';

const result = await build({
  entryPoints: ['src/server.ts', 'src/cli/migrate.ts', 'src/cli/sync.ts'],
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  sourcemap: true,
  outdir: 'dist',
  outbase: 'src',
  logLevel: 'warning',
  write: false,
});

// The website widget (widget/), for browsers: one small self-running script the service serves at /widget.js.
const widget = await build({
  entryPoints: ['widget/widget.ts'],
  bundle: true,
  platform: 'browser',
  target: 'es2020',
  format: 'iife',
  minify: true,
  outfile: 'dist/widget.js',
  logLevel: 'warning',
  write: false,
});

await Promise.all(
  [...result.outputFiles, ...widget.outputFiles].map(async (file) => {
    await mkdir(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    await writeFile(temporary, file.contents);
    await rename(temporary, file.path);
  }),
);
