import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { aug, contactWithConversation, insertEvent, walk, WINDOW } from './export-helpers.ts';

let t: TestApp;
let tenant: Tenant;
const ids: Record<string, string> = {};

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_EVENTS_PER_MINUTE: '100000' });
  tenant = await createTenant(t.app);
  const db = t.database.db;
  const wa = await contactWithConversation(db, tenant.businessId, 'whatsapp');
  const ig = await contactWithConversation(db, tenant.businessId, 'instagram');
  ids.field = (
    await insertEvent(db, tenant.businessId, {
      contact_id: wa.contact.id,
      type: 'contact_field_changed',
      data: JSON.stringify({ source: 'api', changes: [] }),
      created_at: aug(1),
    })
  ).id;
  ids.waArchived = (
    await insertEvent(db, tenant.businessId, {
      contact_id: wa.contact.id,
      conversation_id: wa.conversation.id,
      channel: 'whatsapp',
      created_at: aug(2),
    })
  ).id;
  ids.igAgent = (
    await insertEvent(db, tenant.businessId, {
      contact_id: ig.contact.id,
      conversation_id: ig.conversation.id,
      channel: 'instagram',
      type: 'agent_assigned',
      data: JSON.stringify({ from_agent: null, to_agent: null }),
      created_at: aug(3),
    })
  ).id;
  ids.outside = (
    await insertEvent(db, tenant.businessId, {
      contact_id: ig.contact.id,
      created_at: '2026-07-01T00:00:00Z',
      type: 'contact_field_changed',
    })
  ).id;
});
afterAll(() => t.close());

const get = (query: string) =>
  t.app.inject({ method: 'GET', url: `/external/v2/events?${query}`, headers: tenant.headers });
const idsOf = async (query: string) => (await get(query)).json().events.map((e: { id: string }) => e.id);

describe('GET /events', () => {
  it('exports the window oldest first', async () => {
    expect(await idsOf(WINDOW)).toEqual([ids.field, ids.waArchived, ids.igAgent]);
  });

  it('writes each record as the timeline does: agent, user, data as stored, microseconds', async () => {
    const db = t.database.db;
    const tenantT = await createTenant(t.app, 'EventForm');
    const { contact, conversation } = await contactWithConversation(db, tenantT.businessId);
    const agent = await db
      .insertInto('agents')
      .values({ business_id: tenantT.businessId, id: newId(), name: 'Bot "1"' })
      .returningAll()
      .executeTakeFirstOrThrow();
    const user = await db
      .insertInto('users')
      .values({ business_id: tenantT.businessId, id: newId(), email: 'ana@acme.test', name: 'Ana\nB' })
      .returningAll()
      .executeTakeFirstOrThrow();
    const data = {
      from_agent: null,
      to_agent: { id: agent.id, name: 'Bot "1"' },
      note: 'línea\n"dos"\u0001',
      n: 1.5,
      big: 12345678901234,
      list: [true, null, {}],
    };
    const assigned = await insertEvent(db, tenantT.businessId, {
      contact_id: contact.id,
      conversation_id: conversation.id,
      channel: 'whatsapp',
      type: 'agent_assigned',
      actor_type: 'human',
      user_id: user.id,
      data: JSON.stringify(data),
      created_at: aug(5, 7),
    });
    const archived = await insertEvent(db, tenantT.businessId, {
      contact_id: contact.id,
      conversation_id: conversation.id,
      channel: 'whatsapp',
      actor_type: 'ai_agent',
      agent_id: agent.id,
      created_at: aug(6),
    });
    const res = await t.app.inject({ method: 'GET', url: `/external/v2/events?${WINDOW}`, headers: tenantT.headers });
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const exported = res.json().events;
    expect(exported[0]).toEqual({
      id: assigned.id,
      type: 'agent_assigned',
      conversation_id: conversation.id,
      contact_id: contact.id,
      channel: 'whatsapp',
      actor_type: 'human',
      agent: null,
      user: { id: user.id, name: 'Ana\nB', email: 'ana@acme.test' },
      data,
      created_at: aug(5, 7),
    });
    expect(exported[1]).toMatchObject({
      id: archived.id,
      agent: { id: agent.id, name: 'Bot "1"' },
      user: null,
      data: { origin: 'api' },
      created_at: aug(6),
    });
    // The timeline maps the same rows in the service (exports.mappers.ts): both forms must agree.
    const timeline = (
      await t.app.inject({
        method: 'GET',
        url: `/external/v2/contacts/${contact.id}/timeline`,
        headers: tenantT.headers,
      })
    ).json();
    expect(exported).toEqual(timeline.items.map(({ kind: _, ...e }: { kind: string }) => e).reverse());
  });

  it('filters by types', async () => {
    expect(await idsOf(`${WINDOW}&types=agent_assigned,contact_field_changed`)).toEqual([ids.field, ids.igAgent]);
  });

  it('a channel filter leaves contact field changes out', async () => {
    expect(await idsOf(`${WINDOW}&channel=whatsapp`)).toEqual([ids.waArchived]);
    expect(await idsOf(`${WINDOW}&channel=whatsapp,instagram&types=contact_field_changed`)).toEqual([]);
  });

  it('pages with a cursor bound to the types', async () => {
    const { records, pages } = await walk(
      t,
      tenant,
      'events',
      `${WINDOW}&limit=1&types=contact_field_changed,conversation_archived,agent_assigned`,
    );
    expect(records.map((r) => r.id)).toEqual([ids.field, ids.waArchived, ids.igAgent]);
    expect(pages).toBe(3);
    const first = (await get(`${WINDOW}&limit=1&types=agent_assigned,contact_field_changed`)).json();
    // Same types in another order: the same query.
    expect(
      (
        await get(
          `${WINDOW}&limit=1&types=contact_field_changed,agent_assigned&cursor=${encodeURIComponent(first.next_cursor)}`,
        )
      ).statusCode,
    ).toBe(200);
    expect(
      (await get(`${WINDOW}&limit=1&types=agent_assigned&cursor=${encodeURIComponent(first.next_cursor)}`)).statusCode,
    ).toBe(400);
  });

  it('is documented in the OpenAPI document with the timeline and the conversation operations', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of [
      '/external/v2/messages',
      '/external/v2/events',
      '/external/v2/contacts/{uuid}/timeline',
      '/admin/v1/businesses/{bid}/conversations/{id}/manual-control',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(Object.keys(doc.paths['/external/v2/events'].get.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '429']),
    );
  });

  it.each([
    ['unknown type', `${WINDOW}&types=agent_assigned,order_created`],
    ['unknown channel', `${WINDOW}&channel=telegram`],
    ['window over 31 days', 'since=2026-07-01T00:00:00Z&until=2026-08-02T00:00:00Z'],
    ['since missing', 'until=2026-08-02T00:00:00Z'],
    ['limit over 500', `${WINDOW}&limit=501`],
    ['invalid cursor', `${WINDOW}&cursor=x.y`],
    ['over-long types', `${WINDOW}&types=${'a'.repeat(1001)}`],
  ])('400 for %s', async (_name, query) => {
    const res = await get(query);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });
});
