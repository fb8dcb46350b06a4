import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDemoIfEmpty } from '../../../src/modules/demo/demo.seed.ts';
import { demoRecords } from '../../../src/modules/demo/demo.data.ts';
import { normalisePhone } from '../../../src/lib/phone.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

const count = async (table: string) =>
  (await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(t.database.db)).rows[0].n;

describe('demo seed', () => {
  it('fills an empty database once: business, working key, contact fields, contacts, conversations, messages, events', async () => {
    const demo = await seedDemoIfEmpty(t.app.services);
    expect(demo).toBeDefined();
    expect(demo!.contactPhone).toBe('5491123456789');
    const businessId = await t.app.services.apiKeys.resolve(demo!.key);
    expect(businessId).toMatch(/^[0-9a-f-]{36}$/);

    const fields = await t.database.db
      .selectFrom('contact_fields')
      .select('key')
      .where('business_id', '=', businessId!)
      .orderBy('key')
      .execute();
    expect(fields.map((f) => f.key)).toEqual(['city', 'plan']);
    expect(await count('contacts')).toBe(10);
    expect(await count('conversations')).toBeGreaterThanOrEqual(5);
    expect(await count('messages')).toBeGreaterThanOrEqual(35);

    const contact = await t.database.db
      .selectFrom('contacts')
      .selectAll()
      .where('phone_number', '=', demo!.contactPhone)
      .executeTakeFirstOrThrow();
    expect(contact).toMatchObject({
      business_id: businessId,
      first_name: 'Lucía',
      email: 'lucia.fernandez@example.com',
      phone_key: normalisePhone(demo!.contactPhone)!.key,
    });

    const channels = await t.database.db.selectFrom('conversations').select('channel').distinct().execute();
    expect(channels.length).toBeGreaterThanOrEqual(4);
    const counters = await sql<{
      n: number;
      total: number;
    }>`SELECT count(*)::int AS n, sum(message_count)::int AS total FROM conversations WHERE last_message_at IS NOT NULL`.execute(
      t.database.db,
    );
    expect(counters.rows[0]).toEqual({ n: await count('conversations'), total: await count('messages') });

    const events = await t.database.db.selectFrom('events').select(['type', 'channel', 'conversation_id']).execute();
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['contact_field_changed', 'conversation_archived']),
    );
    expect(events.find((e) => e.type === 'contact_field_changed')).toMatchObject({
      channel: null,
      conversation_id: null,
    });
    expect(events.find((e) => e.type === 'conversation_archived')!.channel).toBe('whatsapp');
    const archived = await t.database.db
      .selectFrom('conversations')
      .select('id')
      .where('closed_at', 'is not', null)
      .execute();
    expect(archived).toHaveLength(1);

    const agent = await t.app.inject({
      url: `/external/v2/agents/${demo!.agentId}`,
      headers: { 'x-api-key': demo!.key },
    });
    expect(agent.statusCode).toBe(200);
    expect(agent.json()).toMatchObject({
      agent: { name: 'Sofía', tools: { human_handoff: { enabled: true } } },
      business_id: businessId,
    });

    // Its owner signs in to the dashboard with the password made for it.
    expect(demo!.owner).toEqual({ email: 'owner@demo.example', password: expect.stringMatching(/^[\w-]{16}$/) });
    const signIn = await t.app.inject({
      method: 'POST',
      url: '/dashboard/api/session',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(demo!.owner),
    });
    expect(signIn.statusCode).toBe(200);
    expect(signIn.json()).toMatchObject({
      user: { role: 'owner' },
      business: { id: businessId, name: 'Demo business' },
    });
  });

  it('does nothing on a database that has data', async () => {
    const before = await count('businesses');
    expect(await seedDemoIfEmpty(t.app.services)).toBeUndefined();
    expect(await count('businesses')).toBe(before);
  });

  it('does nothing when the database holds another business', async () => {
    const fresh = await buildTestApp();
    try {
      await createTenant(fresh.app, 'Real');
      expect(await seedDemoIfEmpty(fresh.app.services)).toBeUndefined();
      const contacts = await fresh.database.db.selectFrom('contacts').select('id').execute();
      expect(contacts).toHaveLength(0);
    } finally {
      await fresh.close();
    }
  });

  it('builds valid records: every phone normalises and ids follow their timestamps', () => {
    const records = demoRecords(Date.UTC(2026, 7, 4));
    for (const r of records) {
      if (r.type === 'contact') expect(normalisePhone(r.phone_number!), r.phone_number!).toBeDefined();
    }
    const messages = records.filter((r) => r.type === 'message');
    expect(messages.length).toBeGreaterThanOrEqual(35);
    const byTime = [...messages].sort((a, b) => a.created_at.localeCompare(b.created_at)).map((m) => m.id);
    expect([...byTime].sort()).toEqual(byTime);
  });
});
