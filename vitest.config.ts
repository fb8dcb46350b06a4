import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { FuzzFirstSequencer } from './test/tools/sequencer.ts';

// The suite runs on the embedded engine always, and once more on PostgreSQL when
// TEST_DATABASE_URL is set.
const engines = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])];

const fuzz = ['test/**/*.fuzz.test.ts'];
/**
 * Files that run in a fresh module graph. Every other file shares its worker's loaded modules with
 * the files before it, so a file must close what it opens and leave module-level state as it found
 * it. These check that statements get names, which src/db/prepared-statements.ts gives to at most
 * 500 texts per process: after other files in the same worker, a new text could get none.
 */
const isolated = [
  'test/db/prepared-statements.test.ts',
  'test/db/prepared-queries.test.ts',
  'test/db/json-rows.test.ts',
];

/**
 * With both engines, the embedded one runs again only the database layer's own tests and the server's
 * start (`npm start` on the embedded default): a PGlite file costs about three times its PostgreSQL
 * run on the 2-core CI machine, and everything twice takes the CI past ten minutes. Every file runs on
 * the embedded engine wherever PostgreSQL is absent (a plain `npm test`).
 */
const embeddedAlso = ['test/db/**'];
const alsoFiles = ['test/server.test.ts'];
/**
 * Of those, the upgrades of stored data by each migration run on PostgreSQL only then: the same SQL,
 * and on the embedded engine the longest file after the engine's own (83 s of the CI's two cores);
 * every embedded test database is migrated from empty all the same.
 */
const embeddedNotAlso = ['test/db/migrations.test.ts'];

/** Three projects per engine: the generated-input tests (longest, run first), the isolated files, the rest. */
const projects = engines.flatMap((engine) => {
  const base = {
    env: { TEST_ENGINE: engine },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  };
  const narrowed = engine === 'pglite' && engines.length > 1;
  return [
    {
      test: {
        ...base,
        name: `${engine}-fuzz`,
        include: narrowed ? embeddedAlso.map((dir) => `${dir}/*.fuzz.test.ts`) : fuzz,
        isolate: false,
      },
    },
    { test: { ...base, name: `${engine}-isolated`, include: isolated, isolate: true } },
    {
      test: {
        ...base,
        name: engine,
        include: narrowed ? [...embeddedAlso.map((dir) => `${dir}/*.test.ts`), ...alsoFiles] : ['test/**/*.test.ts'],
        exclude: [...fuzz, ...isolated, ...(narrowed ? embeddedNotAlso : [])],
        isolate: false,
      },
    },
  ];
});

export default defineConfig({
  test: {
    // Each file's database is a copy of one migrated database made once per run, per engine.
    globalSetup: ['test/global-setup.ts'],
    // The tests wait on the database, child processes and timers more than they compute: two workers
    // kept a 2-core machine 60 % busy, four run the suite about a third sooner.
    maxWorkers: Math.max(4, availableParallelism()),
    sequence: { sequencer: FuzzFirstSequencer },
    projects,
  },
});
