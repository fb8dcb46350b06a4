import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingInput } from '../../../src/modules/search/search.service.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;
let tenant: Tenant;
let other: Tenant;
let products: string;

beforeAll(async () => {
  t = await buildTestApp();
  tenant = await createTenant(t.app);
  other = await createTenant(t.app, 'Other');
  products = (await createCollection({ name: 'Products', embedding_fields: ['title', 'details.summary'] })).json()
    .collection.id;
});
afterAll(() => t.close());

const UNKNOWN = '01900000-0000-7000-8000-000000000000';

const createCollection = (payload: unknown, bid = tenant.businessId, headers: Record<string, string> = adminHeaders) =>
  t.app.inject({ method: 'POST', url: `/admin/v1/businesses/${bid}/collections`, headers, payload: payload as object });

const upsert = (payload: unknown, headers: Record<string, string> = tenant.headers) =>
  t.app.inject({ method: 'POST', url: '/external/v2/search/item', headers, payload: payload as object });

const rows = (externalId: string) =>
  t.database.db.selectFrom('search_items').selectAll().where('external_id', '=', externalId).execute();

const shoe = {
  title: 'Trail shoe',
  price: 89.9,
  details: { summary: 'Light shoe for rocky paths', colours: ['red', 'grey'] },
};

describe('POST /admin/v1/businesses/:bid/collections', () => {
  it('creates a collection and refuses a second of the same name', async () => {
    const res = await createCollection({ name: 'FAQ', embedding_fields: ['question', 'answer'] });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      collection: { id: res.json().collection.id, name: 'FAQ', embedding_fields: ['question', 'answer'] },
    });
    const again = await createCollection({ name: 'FAQ', embedding_fields: ['question'] });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('conflict');
    // Another business may use the name.
    expect((await createCollection({ name: 'FAQ', embedding_fields: ['q'] }, other.businessId)).statusCode).toBe(201);
  });

  it("lists the business's collections oldest first", async () => {
    const fresh = await createTenant(t.app, 'Collections');
    for (const name of ['A', 'B'])
      expect((await createCollection({ name, embedding_fields: ['title'] }, fresh.businessId)).statusCode).toBe(201);
    const list = (query = '', bid = fresh.businessId) =>
      t.app.inject({ url: `/admin/v1/businesses/${bid}/collections${query}`, headers: adminHeaders });
    const res = await list();
    expect(res.statusCode).toBe(200);
    expect(
      res.json().collections.map((c: { name: string; embedding_fields: string[] }) => [c.name, c.embedding_fields]),
    ).toEqual([
      ['A', ['title']],
      ['B', ['title']],
    ]);
    expect((await list('?limit=1')).json().collections).toHaveLength(1);
    expect((await list('?limit=x')).statusCode).toBe(400);
    expect((await list('', UNKNOWN)).statusCode).toBe(404);
    expect((await t.app.inject({ url: `/admin/v1/businesses/${fresh.businessId}/collections` })).statusCode).toBe(401);
  });

  it('answers 400 for bad bodies, 404 for an unknown business, 401 without the token', async () => {
    const bad = [
      {},
      { name: 'x' },
      { name: '', embedding_fields: ['a'] },
      { name: 'x', embedding_fields: [] },
      { name: 'x', embedding_fields: ['a', 'a'] },
      { name: 'x', embedding_fields: [''] },
      { name: 'x', embedding_fields: ['a..b'] },
      { name: 'x', embedding_fields: ['.a'] },
      { name: 'x', embedding_fields: 'a' },
      { name: 'x', embedding_fields: ['a'], extra: 1 },
      { name: 'x', embedding_fields: Array.from({ length: 51 }, (_, i) => `f${i}`) },
    ];
    for (const body of bad)
      expect((await createCollection(body)).statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
    expect((await createCollection({ name: 'y', embedding_fields: ['a'] }, UNKNOWN)).statusCode).toBe(404);
    expect((await createCollection({ name: 'y', embedding_fields: ['a'] }, tenant.businessId, {})).statusCode).toBe(
      401,
    );
  });
});

describe('POST /external/v2/search/item', () => {
  it("creates an item, its embedding input taken from the collection's embedding_fields", async () => {
    const res = await upsert({ collection_id: products, external_id: 'sku-1', item: shoe });
    expect(res.statusCode, res.body).toBe(200);
    const item = res.json();
    expect(item).toEqual({
      id: item.id,
      collection_id: products,
      external_id: 'sku-1',
      source: 'api',
      operation: 'created',
      is_active: true,
      embedding_regenerated: true,
      payload: shoe,
      embedding_json: { title: 'Trail shoe', 'details.summary': 'Light shoe for rocky paths' },
      created_at: item.created_at,
      updated_at: item.created_at,
    });
    expect(await rows('sku-1')).toHaveLength(1);
    // Without EMBEDDINGS_URL no embedding is queued: the input is kept for when one is configured.
    expect(await t.database.db.selectFrom('outbox').select('id').where('ref_id', '=', item.id).execute()).toEqual([]);
  });

  it('answers unchanged for the same write, updated when the content changes, and says when the embedding input changed', async () => {
    const first = (await upsert({ collection_id: products, external_id: 'sku-2', item: shoe })).json();
    const same = (await upsert({ collection_id: products, external_id: 'sku-2', item: { ...shoe } })).json();
    expect(same).toMatchObject({
      id: first.id,
      operation: 'unchanged',
      embedding_regenerated: false,
      updated_at: first.updated_at,
    });

    // The price is not an embedding field: the payload changes, the embedding input does not.
    const cheaper = (
      await upsert({ collection_id: products, external_id: 'sku-2', item: { ...shoe, price: 79 } })
    ).json();
    expect(cheaper).toMatchObject({
      id: first.id,
      operation: 'updated',
      embedding_regenerated: false,
      payload: { price: 79 },
      created_at: first.created_at,
    });
    expect(cheaper.updated_at > first.updated_at).toBe(true);

    const renamed = (
      await upsert({
        collection_id: products,
        external_id: 'sku-2',
        item: { ...shoe, price: 79, title: 'Trail runner' },
      })
    ).json();
    expect(renamed).toMatchObject({
      operation: 'updated',
      embedding_regenerated: true,
      embedding_json: { title: 'Trail runner' },
    });

    const inactive = (
      await upsert({ collection_id: products, external_id: 'sku-2', item: renamed.payload, active: false })
    ).json();
    expect(inactive).toMatchObject({ operation: 'updated', is_active: false, embedding_regenerated: false });
    const stillInactive = (
      await upsert({ collection_id: products, external_id: 'sku-2', item: renamed.payload, active: false })
    ).json();
    expect(stillInactive.operation).toBe('unchanged');
    // active defaults to true: a write without it reactivates the item.
    const active = (await upsert({ collection_id: products, external_id: 'sku-2', item: renamed.payload })).json();
    expect(active).toMatchObject({ operation: 'updated', is_active: true });
    expect(await rows('sku-2')).toHaveLength(1);
  });

  it('compares content, not key order or number spelling', async () => {
    await upsert({ collection_id: products, external_id: 'sku-3', item: { title: 'Sock', n: 0, tags: ['a'] } });
    const reordered = await t.app.inject({
      method: 'POST',
      url: '/external/v2/search/item',
      headers: { ...tenant.headers, 'content-type': 'application/json' },
      payload: `{"collection_id":"${products}","external_id":"sku-3","item":{"tags":["a"],"n":-0.0,"title":"Sock"}}`,
    });
    expect(reordered.json().operation).toBe('unchanged');
  });

  it("uses embedding_json when sent, whatever the collection's fields", async () => {
    const res = (
      await upsert({
        collection_id: products,
        external_id: 'sku-4',
        item: { code: 'X1' },
        embedding_json: { text: 'A product code' },
      })
    ).json();
    expect(res).toMatchObject({ operation: 'created', embedding_json: { text: 'A product code' } });
    const changed = (
      await upsert({
        collection_id: products,
        external_id: 'sku-4',
        item: { code: 'X1' },
        embedding_json: { text: 'Code X1' },
      })
    ).json();
    expect(changed).toMatchObject({ operation: 'updated', embedding_regenerated: true });
    // Back to the collection's fields: the item has none of them.
    const none = await upsert({ collection_id: products, external_id: 'sku-4', item: { code: 'X1' } });
    expect(none.statusCode).toBe(400);
    expect(none.json().error.details).toEqual([{ location: 'body', path: '/item', message: 'no embedding field' }]);
  });

  it('keeps one item when two writes of a new item arrive at once', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, () => upsert({ collection_id: products, external_id: 'sku-5', item: shoe })),
    );
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200]);
    expect(results.map((r) => r.json().operation).sort()).toEqual([
      'created',
      'unchanged',
      'unchanged',
      'unchanged',
      'unchanged',
    ]);
    expect(await rows('sku-5')).toHaveLength(1);
  });

  it('keeps external ids apart per collection and per business', async () => {
    const faq = (await createCollection({ name: 'Help', embedding_fields: ['title'] })).json().collection.id;
    const inFaq = (await upsert({ collection_id: faq, external_id: 'sku-1', item: { title: 'Returns' } })).json();
    expect(inFaq.operation).toBe('created');
    // Another business cannot write into (or learn of) this business's collection.
    const foreign = await upsert(
      { collection_id: products, external_id: 'sku-1', item: { title: 'Hijack' } },
      other.headers,
    );
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().error.details).toEqual([
      { location: 'body', path: '/collection_id', message: 'unknown collection' },
    ]);
    const [stored] = await rows('sku-1').then((r) => r.filter((row) => row.collection_id === products));
    expect(stored.payload).toEqual(shoe);
  });

  it('answers 400 for bad bodies, 401 without a key, and stores nothing', async () => {
    const bad = [
      {},
      { collection_id: products, external_id: 'bad' },
      { collection_id: products, item: shoe },
      { external_id: 'bad', item: shoe },
      { collection_id: 'nope', external_id: 'bad', item: shoe },
      { collection_id: UNKNOWN, external_id: 'bad', item: shoe },
      { collection_id: products, external_id: '', item: shoe },
      { collection_id: products, external_id: '   ', item: shoe },
      { collection_id: products, external_id: 'bad', item: shoe, embedding_json: {} },
      { collection_id: products, external_id: 'bad', item: { title: Infinity } },
      { collection_id: products, external_id: 'x'.repeat(256), item: shoe },
      { collection_id: products, external_id: 5, item: shoe },
      { collection_id: products, external_id: 'bad', item: 'text' },
      { collection_id: products, external_id: 'bad', item: [shoe] },
      { collection_id: products, external_id: 'bad', item: shoe, embedding_json: 'text' },
      { collection_id: products, external_id: 'bad', item: shoe, active: 'yes' },
      { collection_id: products, external_id: 'bad', item: shoe, extra: 1 },
      { collection_id: products, external_id: 'bad', item: { title: 'x'.repeat(257 * 1024) } },
      { collection_id: products, external_id: 'bad', item: { title: 'x'.repeat(33 * 1024) } },
      { collection_id: products, external_id: 'bad', item: shoe, embedding_json: { text: 'x'.repeat(33 * 1024) } },
      { collection_id: products, external_id: 'bad', item: { title: 'a\u0000b' } },
    ];
    for (const body of bad) {
      const res = await upsert(body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 100)).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    expect((await upsert({ collection_id: products, external_id: 'bad', item: shoe }, {})).statusCode).toBe(401);
    expect(await rows('bad')).toHaveLength(0);
  });
});

describe('embeddingInput', () => {
  it('reads keys and dotted paths, skips absent and null values, and refuses an item with none', () => {
    const item = { a: 1, b: { c: 'deep', d: null }, e: [1, 2] };
    expect(embeddingInput(item, ['a', 'b.c', 'b.d', 'e', 'x', 'a.b'])).toEqual({ a: 1, 'b.c': 'deep', e: [1, 2] });
    // A key holding the dot is read first.
    expect(embeddingInput({ 'b.c': 'flat', b: { c: 'deep' } }, ['b.c'])).toEqual({ 'b.c': 'flat' });
    expect(embeddingInput({ constructor: 'x', toString: { y: 1 } }, ['constructor', 'toString.y'])).toEqual({
      constructor: 'x',
      'toString.y': 1,
    });
    expect(() => embeddingInput(item, ['x', 'b.x'])).toThrow(/none of the collection's embedding_fields/);
  });
});

describe('the OpenAPI document', () => {
  it('describes the search item and collection endpoints', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    expect(Object.keys(doc.paths['/external/v2/search/item'].post.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401']),
    );
    expect(doc.paths['/admin/v1/businesses/{bid}/collections'].post).toBeDefined();
  });
});
