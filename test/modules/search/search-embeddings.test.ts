import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { newId } from '../../../src/lib/ids.ts';
import { EmbeddingError, embeddingText, openAiEmbeddings } from '../../../src/modules/search/embeddings.client.ts';
import { searchEmbedJobHandler, SEARCH_EMBED_JOB } from '../../../src/modules/search/search.embed-job.ts';
import { searchRepository } from '../../../src/modules/search/search.repository.ts';
import { fakeVector, startFakeEmbeddingsApi, type FakeEmbeddingsApi } from '../../helpers/fake-embeddings-api.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { until } from '../sending/sending.fixtures.ts';

let fake: FakeEmbeddingsApi;
let t: TestApp;
let tenant: Tenant;
let collection: string;

beforeAll(async () => {
  fake = await startFakeEmbeddingsApi();
  t = await buildTestApp({
    EMBEDDINGS_URL: fake.url,
    EMBEDDINGS_API_KEY: 'sk-test-key',
    EMBEDDINGS_MODEL: 'test-embed-1',
  });
  tenant = await createTenant(t.app);
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${tenant.businessId}/collections`,
    headers: adminHeaders,
    payload: { name: 'Products', embedding_fields: ['title', 'details.summary'] },
  });
  collection = res.json().collection.id;
});
afterAll(async () => {
  await t.close();
  await fake.close();
});

const upsert = (externalId: string, item: Record<string, unknown>) =>
  t.app.inject({
    method: 'POST',
    url: '/external/v2/search/item',
    headers: tenant.headers,
    payload: { collection_id: collection, external_id: externalId, item },
  });

const row = (id: string) =>
  t.database.db
    .selectFrom('search_items')
    .select(['embedding', 'embedding_model', 'embedded_at', 'embedding_json'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

const embedded = async (id: string) => {
  await until(async () => (await row(id)).embedding !== null);
  return row(id);
};

const float4 = (values: number[]) => values.map((v) => Math.fround(v));

describe('search item embeddings', () => {
  it("computes an item's embedding from its embedding input, through the configured API", async () => {
    const item = (
      await upsert('sku-1', { title: 'Trail shoe', price: 89.9, details: { summary: 'Light, for rocky paths' } })
    ).json();
    expect(item.embedding_regenerated).toBe(true);
    const stored = await embedded(item.id);
    const text = 'title: Trail shoe\ndetails.summary: Light, for rocky paths';
    expect(stored.embedding!.map(Math.fround)).toEqual(float4(fakeVector(text)));
    expect(stored.embedding_model).toBe('test-embed-1');
    const call = fake.requests.find((r) => r.body.input === text)!;
    expect(call.body).toEqual({ model: 'test-embed-1', input: text });
    expect(call.headers.authorization).toBe('Bearer sk-test-key');
  });

  it('computes it again only when the embedding input changes', async () => {
    const first = (await upsert('sku-2', { title: 'Sock', price: 5 })).json();
    await embedded(first.id);
    const calls = fake.requests.length;
    // Same content, then a price change: the input is the same, no call.
    expect((await upsert('sku-2', { title: 'Sock', price: 5 })).json().operation).toBe('unchanged');
    expect((await upsert('sku-2', { title: 'Sock', price: 4 })).json()).toMatchObject({
      operation: 'updated',
      embedding_regenerated: false,
    });
    expect(fake.requests.length).toBe(calls);
    expect((await row(first.id)).embedding).not.toBeNull();
    // A new title: the old embedding is dropped at once and a new one computed.
    const renamed = (await upsert('sku-2', { title: 'Wool sock', price: 4 })).json();
    expect(renamed.embedding_regenerated).toBe(true);
    const stored = await embedded(first.id);
    expect(stored.embedding!.map(Math.fround)).toEqual(float4(fakeVector('title: Wool sock')));
  });

  it('does not store an embedding computed from an input the item no longer has', async () => {
    const item = (await upsert('sku-3', { title: 'Cap' })).json();
    await embedded(item.id);
    await upsert('sku-3', { title: 'Blue cap' });
    await searchRepository.recordEmbedding(
      t.database.db,
      tenant.businessId,
      item.id,
      { title: 'Cap' },
      { vector: [1, 2], model: 'stale' },
    );
    const stored = await row(item.id);
    expect(stored.embedding_model).not.toBe('stale');
  });

  it('retries what may pass later (429, 5xx, unreachable) and gives up on the rest', async () => {
    // A fake of its own: the app's worker, embedding other items, calls the shared one.
    const own = await startFakeEmbeddingsApi();
    const provider = openAiEmbeddings({ url: own.url, apiKey: undefined, model: 'm' });
    for (const [status, retryable] of [
      [429, true],
      [500, true],
      [503, true],
      [400, false],
      [401, false],
    ] as const) {
      own.failNext(1, status);
      const error = await provider.embed('x').catch((err: unknown) => err);
      expect(error, String(status)).toBeInstanceOf(EmbeddingError);
      expect((error as EmbeddingError).retryable, String(status)).toBe(retryable);
    }
    const unreachable = await openAiEmbeddings({ url: 'http://127.0.0.1:9/v1', apiKey: undefined, model: 'm' })
      .embed('x')
      .catch((err: unknown) => err);
    expect((unreachable as EmbeddingError).retryable).toBe(true);

    const item = (await upsert('sku-4', { title: 'Belt' })).json();
    await embedded(item.id);
    const handler = searchEmbedJobHandler(t.database.db, provider);
    // A job as a worker holds it: running under a lease no sweep takes over.
    const job = await t.database.db
      .insertInto('outbox')
      .values({
        business_id: tenant.businessId,
        id: newId(),
        kind: SEARCH_EMBED_JOB,
        ref_id: item.id,
        state: 'running',
        attempts: 1,
        locked_until: new Date(Date.now() + 3600_000).toISOString(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    own.failNext(1, 503);
    expect(await handler.handle(job)).toMatchObject({ retryInSeconds: 30 });
    own.failNext(1, 400);
    expect(await handler.handle(job)).toMatchObject({ failed: expect.stringContaining('400') });
    // Success ends the job in the commit that stores the embedding: no moment shows the one without the other.
    expect(await handler.handle(job)).toEqual({ done: true, recorded: true });
    const ended = await t.database.db.selectFrom('outbox').select('state').where('id', '=', job.id).executeTakeFirst();
    expect(ended?.state).toBe('done');
    // A job that keeps stopping its worker ends.
    expect(await handler.onAbandoned({ ...job, attempts: 3 }, t.database.db)).toBe('retry');
    expect(await handler.onAbandoned({ ...job, attempts: 12 }, t.database.db)).toBe('give_up');
    await own.close();
  });

  it('refuses answers it cannot use, for good: oversized, without a vector, numbers a real cannot hold', async () => {
    const own = await startFakeEmbeddingsApi();
    const provider = openAiEmbeddings({ url: own.url, apiKey: 'sk-SECRET-123', model: 'm' });
    const answers: [number, string | Buffer, RegExp, boolean][] = [
      [200, Buffer.alloc(5 * 1024 * 1024, 0x20), /more than/, false],
      [200, 'null', /usable embedding/, false],
      [200, '{"data":[]}', /usable embedding/, false],
      [200, JSON.stringify({ data: [{ embedding: [0.1, 1e39] }] }), /usable embedding/, false],
      [200, JSON.stringify({ data: [{ embedding: [1e-50] }] }), /usable embedding/, false],
      [200, '{"data": [', /malformed JSON/, true],
      [
        502,
        'upstream error; request headers: authorization=Bearer sk-SECRET-123, x-key=sk-SECRET-123',
        /answered 502/,
        true,
      ],
    ];
    for (const [status, body, message, retryable] of answers) {
      own.answerNext(status, body);
      const error = (await provider.embed('x').catch((err: unknown) => err)) as EmbeddingError;
      expect(error, String(body).slice(0, 40)).toBeInstanceOf(EmbeddingError);
      expect(error.message).toMatch(message);
      expect(error.message).not.toContain('sk-SECRET-123');
      expect(error.retryable, String(body).slice(0, 40)).toBe(retryable);
    }
    // Denormal and zero values are what a real holds.
    own.answerNext(200, JSON.stringify({ data: [{ embedding: [0, -1.5e-45, 3.4e38] }], model: 'm' }));
    expect((await provider.embed('x')).vector).toEqual([0, -1.5e-45, 3.4e38]);
    await own.close();
  });

  it('queues the embedding again with the next write of an item whose job gave up long ago', async () => {
    const item = (await upsert('sku-6', { title: 'Gloves' })).json();
    await embedded(item.id);
    // As after an outage that outlasted the job's tries: no embedding, queued two hours ago.
    await t.database.db
      .updateTable('search_items')
      .set({
        embedding: null,
        embedding_model: null,
        embedded_at: null,
        embedding_queued_at: new Date(Date.now() - 2 * 3600_000).toISOString(),
      })
      .where('id', '=', item.id)
      .execute();
    const again = (await upsert('sku-6', { title: 'Gloves' })).json();
    expect(again).toMatchObject({ operation: 'unchanged', embedding_regenerated: true });
    expect((await embedded(item.id)).embedding!.map(Math.fround)).toEqual(float4(fakeVector('title: Gloves')));
    // Recently queued and still waiting: a write does not queue another.
    await t.database.db
      .updateTable('search_items')
      .set({ embedding: null, embedded_at: null, embedding_queued_at: new Date().toISOString() })
      .where('id', '=', item.id)
      .execute();
    const jobs = async () =>
      (await t.database.db.selectFrom('outbox').select('id').where('ref_id', '=', item.id).execute()).length;
    const before = await jobs();
    expect((await upsert('sku-6', { title: 'Gloves' })).json()).toMatchObject({
      operation: 'unchanged',
      embedding_regenerated: false,
    });
    expect(await jobs()).toBe(before);
  });

  it('queues the embedding with the write: the outbox holds one job per new input', async () => {
    const item = (await upsert('sku-5', { title: 'Scarf' })).json();
    await embedded(item.id);
    const jobs = await t.database.db
      .selectFrom('outbox')
      .select(['kind', 'state'])
      .where('ref_id', '=', item.id)
      .execute();
    expect(jobs).toEqual([{ kind: SEARCH_EMBED_JOB, state: 'done' }]);
  });
});

describe('embedding input text and configuration', () => {
  it('writes one field a line, text as it is and other values as JSON', () => {
    expect(embeddingText({ title: 'Shoe', sizes: [40, 41], 'details.summary': 'Light' })).toBe(
      'title: Shoe\nsizes: [40,41]\ndetails.summary: Light',
    );
  });

  it('reads EMBEDDINGS_URL, EMBEDDINGS_API_KEY and EMBEDDINGS_MODEL, and refuses a bad URL or a key without it', () => {
    const base = { DATA_DIR: 'memory://' };
    expect(loadConfig(base).embeddings).toBeUndefined();
    expect(loadConfig({ ...base, EMBEDDINGS_URL: 'https://api.openai.com/v1/' }).embeddings).toEqual({
      url: 'https://api.openai.com/v1',
      apiKey: undefined,
      model: 'text-embedding-3-small',
    });
    expect(() => loadConfig({ ...base, EMBEDDINGS_URL: 'not a url' })).toThrow(/EMBEDDINGS_URL/);
    expect(() => loadConfig({ ...base, EMBEDDINGS_URL: 'ftp://x/v1' })).toThrow(/http or https/);
    expect(() => loadConfig({ ...base, EMBEDDINGS_API_KEY: 'sk-1' })).toThrow(/need EMBEDDINGS_URL/);
  });
});
