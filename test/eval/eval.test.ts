import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCases } from '../../eval/case.schema.ts';
import { runCase, type EvalService } from '../../eval/harness.ts';
import { startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';
import { startFakeLlmApi, type FakeLlmApi } from '../helpers/fake-llm-api.ts';
import { buildTestApp, engine, type TestApp } from '../helpers/test-app.ts';

// The evaluation set (eval/cases) against the scripted model: each case's expectations hold.
const cases = await loadCases();
let t: TestApp;
let graph: FakeGraphApi;
let llm: FakeLlmApi;
let service: EvalService;

beforeAll(async () => {
  graph = await startFakeGraphApi();
  llm = await startFakeLlmApi();
  t = await buildTestApp({ LLM_URL: llm.url, LLM_API_KEY: 'sk-eval', ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
  service = { app: t.app, db: t.database.db, graph, scripted: llm, turnTimeoutMs: 15_000 };
});
afterAll(async () => {
  await t.close();
  await graph.close();
  await llm.close();
});

describe(`the evaluation set against the scripted model (${engine})`, () => {
  it.each(cases.map((c) => [c.file, c] as const))('%s', async (_file, c) => {
    const result = await runCase(service, c);
    expect(result.failures).toEqual([]);
  });
});
