/**
 * The evaluation set against a model: each case of eval/cases in a business of its own, on an
 * embedded database, with the channel's API on loopback.
 *
 *   npm run eval                                  the scripted model (what the suite runs)
 *   npm run eval -- --url https://api.openai.com/v1 --model gpt-4o-mini   a real model (LLM_API_KEY
 *                                                 from the environment), whose replies are judged
 *                                                 by the same expectations
 *   npm run eval -- --case handoff                only the cases whose file name contains this
 *
 * Exits 1 when a case fails.
 */
import { parseArgs } from 'node:util';
import { startFakeGraphApi } from '../test/helpers/fake-graph-api.ts';
import { startFakeLlmApi } from '../test/helpers/fake-llm-api.ts';
import { buildTestApp } from '../test/helpers/test-app.ts';
import { loadCases } from './case.schema.ts';
import { runCase } from './harness.ts';

const { values } = parseArgs({
  options: { url: { type: 'string' }, model: { type: 'string' }, case: { type: 'string' } },
});
const cases = (await loadCases()).filter((c) => !values.case || c.file.includes(values.case));
const graph = await startFakeGraphApi();
const scripted = values.url ? undefined : await startFakeLlmApi();
const t = await buildTestApp({
  LLM_URL: values.url ?? scripted!.url,
  LLM_API_KEY: process.env.LLM_API_KEY ?? 'sk-eval',
  ...(values.model ? { LLM_MODEL: values.model } : {}),
  ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true',
});
let failed = 0;
try {
  for (const c of cases) {
    const result = await runCase(
      { app: t.app, db: t.database.db, graph, scripted, turnTimeoutMs: scripted ? 15_000 : 120_000 },
      c,
    ).catch((err: Error) => ({ name: c.name, failures: [err.message], replies: [], events: [], runs: [] }));
    if (result.failures.length > 0) failed++;
    console.log(`${result.failures.length === 0 ? 'pass' : 'FAIL'}  ${c.file}: ${c.name}`);
    for (const failure of result.failures) console.log(`        ${failure}`);
    if (!scripted) for (const reply of result.replies) console.log(`        reply: ${reply.slice(0, 200)}`);
  }
} finally {
  await t.close();
  await graph.close();
  await scripted?.close();
}
console.log(`${cases.length - failed} of ${cases.length} cases passed`);
process.exit(failed > 0 ? 1 : 0);
