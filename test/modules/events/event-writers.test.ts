import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/database.ts';
import { newId } from '../../../src/lib/ids.ts';
import * as events from '../../../src/modules/events/events.writer.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { contactWithConversation } from '../exports/export-helpers.ts';

let t: TestApp;
let tenant: Tenant;
let conv: events.EventConversation;
let agent: { id: string; name: string };
let user: { id: string; name: string; email: string };

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_EVENTS_PER_MINUTE: '100000' });
  tenant = await createTenant(t.app);
  const db = t.database.db;
  conv = (await contactWithConversation(db, tenant.businessId, 'instagram')).conversation;
  agent = await db
    .insertInto('agents')
    .values({ business_id: tenant.businessId, id: newId(), name: 'Sofia' })
    .returning(['id', 'name'])
    .executeTakeFirstOrThrow();
  user = await db
    .insertInto('users')
    .values({ business_id: tenant.businessId, id: newId(), email: 'ana@acme.test', name: 'Ana' })
    .returning(['id', 'name', 'email'])
    .executeTakeFirstOrThrow();
});
afterAll(() => t.close());

/** Writes through `write` in a transaction, then reads the one new event back from GET /events. */
async function roundTrip(write: (trx: Db) => Promise<void>) {
  const since = new Date(Date.now() - 1000).toISOString();
  await t.database.db.transaction().execute(write);
  // An explicit until: the default (now) leaves out an event written in the same millisecond.
  const until = new Date(Date.now() + 1000).toISOString();
  const res = await t.app.inject({
    method: 'GET',
    url: `/external/v2/events?since=${since}&until=${until}&limit=500`,
    headers: tenant.headers,
  });
  expect(res.statusCode).toBe(200);
  const all = res.json().events;
  return all[all.length - 1];
}

const ai = () => ({ actorType: 'ai_agent' as const, agentId: agent.id });
const human = () => ({ actorType: 'human' as const, userId: user.id });

describe('typed event writers', () => {
  const transfer = { reason: 'asked for a person', target_user: 'ana@acme.test', attempt_number: 2 };
  const cases: [
    string,
    (trx: Db) => Promise<void>,
    { type: string; actor: string; agent?: boolean; user?: boolean; data: Record<string, unknown> },
  ][] = [
    [
      'manual_control_activated',
      (trx) => events.manualControlActivated(trx, tenant.businessId, conv, human(), { reason: null }),
      { type: 'manual_control_activated', actor: 'human', user: true, data: { reason: null } },
    ],
    [
      'manual_control_released',
      (trx) => events.manualControlReleased(trx, tenant.businessId, conv, { actorType: 'system' }, { reason: 'timer' }),
      { type: 'manual_control_released', actor: 'system', data: { reason: 'timer' } },
    ],
    [
      'manual_control_locked',
      (trx) => events.manualControlLocked(trx, tenant.businessId, conv, human(), { reason: 'vip' }),
      { type: 'manual_control_locked', actor: 'human', user: true, data: { reason: 'vip' } },
    ],
    [
      'manual_control_unlocked',
      (trx) => events.manualControlUnlocked(trx, tenant.businessId, conv, human(), { reason: 'done' }),
      { type: 'manual_control_unlocked', actor: 'human', user: true, data: { reason: 'done' } },
    ],
    [
      'alert_triggered',
      (trx) => events.alertTriggered(trx, tenant.businessId, conv, ai(), { reason: 'angry customer' }),
      { type: 'alert_triggered', actor: 'ai_agent', agent: true, data: { reason: 'angry customer' } },
    ],
    [
      'transfer_accepted',
      (trx) => events.transferAccepted(trx, tenant.businessId, conv, ai(), transfer),
      { type: 'transfer_accepted', actor: 'ai_agent', agent: true, data: transfer },
    ],
    [
      'transfer_rejected',
      (trx) => events.transferRejected(trx, tenant.businessId, conv, ai(), transfer),
      { type: 'transfer_rejected', actor: 'ai_agent', agent: true, data: transfer },
    ],
    [
      'transfer_fallback_required',
      (trx) => events.transferFallbackRequired(trx, tenant.businessId, conv, ai(), { ...transfer, target_user: null }),
      { type: 'transfer_fallback_required', actor: 'ai_agent', agent: true, data: { ...transfer, target_user: null } },
    ],
    [
      'sentiment_analyzed',
      (trx) => events.sentimentAnalyzed(trx, tenant.businessId, conv, ai(), { sentiment: 'NEGATIVE' }),
      { type: 'sentiment_analyzed', actor: 'ai_agent', agent: true, data: { sentiment: 'NEGATIVE' } },
    ],
    [
      'conversation_archived',
      (trx) => events.conversationArchived(trx, tenant.businessId, conv, { actorType: 'api' }, { origin: 'api' }),
      { type: 'conversation_archived', actor: 'api', data: { origin: 'api' } },
    ],
    [
      'conversation_unarchived',
      (trx) =>
        events.conversationUnarchived(
          trx,
          tenant.businessId,
          conv,
          { actorType: 'system' },
          { origin: 'inbound_message' },
        ),
      { type: 'conversation_unarchived', actor: 'system', data: { origin: 'inbound_message' } },
    ],
    [
      'conversation_resolved',
      (trx) => events.conversationResolved(trx, tenant.businessId, conv, human(), { reason: 'solved' }),
      { type: 'conversation_resolved', actor: 'human', user: true, data: { reason: 'solved' } },
    ],
    [
      'agent_assigned',
      (trx) =>
        events.agentChanged(
          trx,
          tenant.businessId,
          conv,
          { actorType: 'api' },
          { from_agent: null, to_agent: agent.id },
        ),
      { type: 'agent_assigned', actor: 'api', agent: true, data: { from_agent: null, to_agent: '<agent>' } },
    ],
    [
      'agent_switched',
      (trx) =>
        events.agentSwitched(
          trx,
          tenant.businessId,
          conv,
          { actorType: 'api', agentId: agent.id },
          { from_agent: newIdFixed, to_agent: agent.id },
        ),
      { type: 'agent_switched', actor: 'api', agent: true, data: { from_agent: newIdFixed, to_agent: '<agent>' } },
    ],
    [
      'agent_removed',
      (trx) => events.agentChanged(trx, tenant.businessId, conv, human(), { from_agent: agent.id, to_agent: null }),
      {
        type: 'agent_removed',
        actor: 'human',
        user: true,
        agent: true,
        data: { from_agent: '<agent>', to_agent: null },
      },
    ],
  ];

  it.each(cases)('%s carries its actor, agent, user and data', async (_name, write, want) => {
    const event = await roundTrip(write);
    const data = Object.fromEntries(Object.entries(want.data).map(([k, v]) => [k, v === '<agent>' ? agent.id : v]));
    expect(event).toEqual({
      id: expect.any(String),
      type: want.type,
      conversation_id: conv.id,
      contact_id: conv.contact_id,
      channel: 'instagram',
      actor_type: want.actor,
      agent: want.agent ? agent : null,
      user: want.user ? user : null,
      data,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
    });
  });

  it('every one about a conversation writes conversation_changed in its transaction, so open dashboards hear of it', async () => {
    const change: Record<string, string> = {
      manual_control_activated: 'manual_control',
      manual_control_released: 'manual_control',
      manual_control_locked: 'manual_control',
      manual_control_unlocked: 'manual_control',
      alert_triggered: 'alert',
      transfer_accepted: 'transfer',
      transfer_rejected: 'transfer',
      transfer_fallback_required: 'transfer',
      sentiment_analyzed: 'sentiment',
      conversation_archived: 'archive',
      conversation_unarchived: 'archive',
      conversation_resolved: 'resolution',
      agent_assigned: 'assignment',
      agent_switched: 'assignment',
      agent_removed: 'assignment',
    };
    for (const [name, write, want] of cases) {
      const { n: before } = await t.database.db
        .selectFrom('domain_events')
        .select((eb) => eb.fn.coalesce(eb.fn.max('id'), eb.lit(0)).as('n'))
        .executeTakeFirstOrThrow();
      await t.database.db.transaction().execute(write);
      const written = await t.database.db
        .selectFrom('domain_events')
        .select(['type', 'conversation_id', 'subject_id', 'data'])
        .where('id', '>', Number(before))
        .execute();
      expect(written, name).toEqual([
        {
          type: 'conversation_changed',
          conversation_id: conv.id,
          subject_id: conv.id,
          data: { change: change[name], event: name, actor_type: want.actor },
        },
      ]);
    }
  });

  it('contact_field_changed has no conversation nor channel and groups the changes', async () => {
    const changes = [
      { field: 'first_name', custom: false, from: 'Ada', to: 'Ana' },
      { field: 'plan', custom: true, from: null, to: 'gold' },
    ];
    const event = await roundTrip((trx) =>
      events.contactFieldChanged(trx, tenant.businessId, {
        contactId: conv.contact_id,
        actorType: 'api',
        source: 'api',
        changes,
      }),
    );
    expect(event).toMatchObject({
      type: 'contact_field_changed',
      conversation_id: null,
      channel: null,
      actor_type: 'api',
      agent: null,
      user: null,
      data: { source: 'api', changes },
    });
  });

  it('refuses a sentiment outside POSITIVE, NEUTRAL, NEGATIVE and writes nothing', async () => {
    const bad = { sentiment: 'MIXED' } as unknown as { sentiment: 'POSITIVE' };
    await expect(
      t.database.db.transaction().execute((trx) => events.sentimentAnalyzed(trx, tenant.businessId, conv, ai(), bad)),
    ).rejects.toThrow(/sentiment/);
  });

  it('writes nothing for an agent change that changes nothing', async () => {
    const before = await t.database.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    await t.database.db
      .transaction()
      .execute((trx) =>
        events.agentChanged(
          trx,
          tenant.businessId,
          conv,
          { actorType: 'api' },
          { from_agent: agent.id, to_agent: agent.id },
        ),
      );
    const after = await t.database.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  });
});

const newIdFixed = '0190f0f0-0000-7000-8000-000000000001';

describe('many events at once', () => {
  it('writes more than one statement can carry as parameters (65 535): 7 000 events of ten values each', async () => {
    const db = t.database.db;
    const contactId = conv.contact_id;
    const before = await countEvents(db, contactId);
    await db.transaction().execute((trx) =>
      events.writeEvents(
        trx,
        tenant.businessId,
        Array.from({ length: 7000 }, (_, i) => ({
          type: 'contact_field_changed' as const,
          contact_id: contactId,
          conversation_id: null,
          channel: null,
          actor_type: 'system',
          user_id: null,
          agent_id: null,
          data: { source: 'test', changes: [{ field: `f${i}`, custom: true, from: null, to: i }] },
        })),
      ),
    );
    expect((await countEvents(db, contactId)) - before).toBe(7000);
  });
});

async function countEvents(db: Db, contactId: string): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('business_id', '=', tenant.businessId)
    .where('contact_id', '=', contactId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
