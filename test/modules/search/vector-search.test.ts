import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { searchRepository, type VectorMethod } from '../../../src/modules/search/search.repository.ts';
import { startFakeLlmApi, type FakeLlmApi } from '../../helpers/fake-llm-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { until } from '../sending/sending.fixtures.ts';

// The AI agent's search ranks a business's items by cosine similarity: with pgvector where the
// database has it, else with the same sum in SQL. Both must give the same items in the same order,
// which is also the exact ranking computed here.

const DIMENSIONS = 16;
let api: FakeLlmApi;
let t: TestApp;
let tenant: Tenant;
let other: Tenant;
const collections: Record<string, string> = {};
/** Each active item of the business, by external id: its collection and vector. */
const items = new Map<string, { collection: string; vector: number[] }>();

/** A repeatable pseudo-random vector (mulberry32). */
function vectorOf(seed: number): number[] {
  let a = seed;
  return Array.from({ length: DIMENSIONS }, () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296 - 0.5;
  });
}

const cosine = (a: number[], b: number[]) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
};

async function collection(owner: Tenant, name: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${owner.businessId}/collections`,
    headers: adminHeaders,
    payload: { name, embedding_fields: ['title'] },
  });
  return res.json().collection.id as string;
}

async function item(owner: Tenant, collectionId: string, externalId: string, vector: number[], active = true) {
  api.vectors.set(`title: ${externalId}`, vector);
  const res = await t.app.inject({
    method: 'POST',
    url: '/external/v2/search/item',
    headers: owner.headers,
    payload: { collection_id: collectionId, external_id: externalId, item: { title: externalId }, active },
  });
  expect(res.statusCode).toBe(200);
}

beforeAll(async () => {
  api = await startFakeLlmApi();
  t = await buildTestApp({ EMBEDDINGS_URL: api.url, EMBEDDINGS_API_KEY: 'sk-test-key' });
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
  collections.faq = await collection(tenant, 'FAQ');
  collections.products = await collection(tenant, 'Products');
  for (let i = 0; i < 40; i++) {
    const name = i % 2 === 0 ? 'faq' : 'products';
    const vector = vectorOf(i + 1);
    await item(tenant, collections[name], `item-${i}`, vector);
    items.set(`item-${i}`, { collection: name, vector });
  }
  // Never found: an inactive item, one of another number of dimensions (another model), a zero
  // vector, and another business's items, each the query's own vector.
  await item(tenant, collections.faq, 'inactive', vectorOf(1001), false);
  await item(tenant, collections.faq, 'short', vectorOf(1002).slice(0, 8));
  await item(tenant, collections.faq, 'zero', new Array<number>(DIMENSIONS).fill(0));
  const foreign = await collection(other, 'FAQ');
  for (const seed of [1001, 1002, 1003]) await item(other, foreign, `foreign-${seed}`, vectorOf(seed));
  await until(async () => {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from search_items
      where embedding is not null`.execute(t.database.db);
    return rows[0].n === 46;
  }, 20_000);
}, 60_000);
afterAll(async () => {
  await t.close();
  await api.close();
});

/** The exact ranking of the business's active items of `collection` (all when absent). */
function expected(query: number[], collection?: string) {
  return [...items.entries()]
    .filter(([, v]) => collection === undefined || v.collection === collection)
    .map(([id, v]) => ({ id, score: cosine(v.vector, query) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, 5);
}

describe('search by meaning (the AI agent’s search_collection)', () => {
  it('uses pgvector on the embedded engine, and where a PostgreSQL server has it', async () => {
    const method = await searchRepository.vectorMethod(t.database.db);
    if (t.database.engine === 'pglite') expect(method.kind).toBe('pgvector');
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_available_extensions
      where name = 'vector'`.execute(t.database.db);
    expect(method.kind).toBe(rows[0].n > 0 ? 'pgvector' : 'scan');
  });

  it('answers the exact top 5 by cosine, the same with pgvector and with the scan, of the business only', async () => {
    const method = await searchRepository.vectorMethod(t.database.db);
    const methods: VectorMethod[] = method.kind === 'pgvector' ? [method, { kind: 'scan' }] : [{ kind: 'scan' }];
    for (const seed of [1001, 1002, 1003, 7, 8]) {
      const query = vectorOf(seed);
      const text = `query ${seed}`;
      api.vectors.set(text, query);
      const want = expected(query);
      const answers = [];
      for (const m of methods)
        answers.push(await t.app.services.search.similar(tenant.businessId, text, { method: m }));
      for (const answer of answers) {
        expect(answer.map((r) => r.external_id)).toEqual(want.map((w) => w.id));
        answer.forEach((r, i) => expect(r.score).toBeCloseTo(want[i].score, 5));
        expect(answer[0]).toMatchObject({ collection: expect.any(String), payload: { title: answer[0].external_id } });
      }
    }
  });

  it("searches one collection, named by its name or its id; another business's collection names none", async () => {
    const query = vectorOf(5);
    api.vectors.set('one collection', query);
    const want = expected(query, 'products').map((w) => w.id);
    for (const ref of ['Products', collections.products]) {
      const found = await t.app.services.search.similar(tenant.businessId, 'one collection', { collection: ref });
      expect(found.map((r) => r.external_id)).toEqual(want);
      expect(new Set(found.map((r) => r.collection))).toEqual(new Set(['Products']));
    }
    const foreign = await collection(other, 'Elsewhere');
    for (const ref of ['Elsewhere', foreign])
      await expect(
        t.app.services.search.similar(tenant.businessId, 'one collection', { collection: ref }),
      ).rejects.toThrow('no collection');
  });
});
