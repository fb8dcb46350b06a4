import { build } from 'esbuild';
import { gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';

it('the widget script stays under 50 KB gzipped, as scripts/build.mjs bundles it', async () => {
  const result = await build({
    entryPoints: ['widget/widget.ts'],
    bundle: true,
    platform: 'browser',
    target: 'es2020',
    format: 'iife',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0].contents;
  expect(code.length).toBeGreaterThan(1000);
  expect(gzipSync(code).length).toBeLessThan(50 * 1024);
});
