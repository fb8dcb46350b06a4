import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateTo, migrateToLatest } from '../../src/db/migrate.ts';
import { newId } from '../../src/lib/ids.ts';
import { engine } from '../helpers/test-app.ts';

let database: DatabaseHandle;

beforeAll(async () => {
  database = await openDatabase({ dataDir: 'memory://' });
});
afterAll(() => database.close());

// Once, on the embedded engine: the migration's SQL is the same on both.
describe.runIf(engine === 'pglite')('migration 0011 (agents and search)', () => {
  it('keeps the free-form config of agents made before it, as their data, and can be undone', async () => {
    const db = database.db;
    // The schema as it was before 0011.
    await migrateTo(db, '0010-batch-rows');
    const businessId = newId();
    const agentId = newId();
    await sql`INSERT INTO businesses (id, name) VALUES (${businessId}, 'Old')`.execute(db);
    await sql`INSERT INTO agents (business_id, id, name, config) VALUES (${businessId}, ${agentId}, 'Legacy', ${JSON.stringify({ model: 'small', tone: 'dry' })})`.execute(
      db,
    );

    await migrateToLatest(db);
    const agent = await db.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirstOrThrow();
    expect(agent).toMatchObject({
      name: 'Legacy',
      type: 'basic',
      system_prompt: '',
      model: null,
      data: { model: 'small', tone: 'dry' },
      tools: {},
      prompt_config: {},
    });
    expect(agent.updated_at).toBe(agent.created_at);

    await migrateTo(db, '0010-batch-rows');
    const { rows } = await sql<{ config: unknown }>`SELECT config FROM agents WHERE id = ${agentId}`.execute(db);
    expect(rows[0].config).toEqual({ model: 'small', tone: 'dry' });
  });
});

describe.runIf(engine === 'pglite')('migration 0013 (media ids)', () => {
  /** A business with one message to attach files to; the media ids the inserts got. */
  async function insertMedia(count: number): Promise<number[]> {
    const db = database.db;
    const [businessId, contactId, conversationId, messageId] = [newId(), newId(), newId(), newId()];
    await sql`INSERT INTO businesses (id, name) VALUES (${businessId}, 'Files')`.execute(db);
    await sql`INSERT INTO contacts (business_id, id) VALUES (${businessId}, ${contactId})`.execute(db);
    await sql`INSERT INTO conversations (business_id, id, contact_id, channel) VALUES (${businessId}, ${conversationId}, ${contactId}, 'whatsapp')`.execute(
      db,
    );
    await sql`INSERT INTO messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type, type, status)
      VALUES (${businessId}, ${messageId}, ${conversationId}, ${contactId}, 'whatsapp', 'inbound', 'contact', 'image', 'RECEIVED')`.execute(
      db,
    );
    const ids: number[] = [];
    for (let i = 0; i < count; i++) {
      const { rows } = await sql<{
        id: number;
      }>`INSERT INTO media (business_id, message_id) VALUES (${businessId}, ${messageId}) RETURNING id`.execute(db);
      ids.push(rows[0].id);
    }
    return ids;
  }

  it('draws ids at random within the exact JavaScript integers, keeping those given before; undone, ids count on after them', async () => {
    await migrateTo(database.db, '0012-search-embeddings');
    const before = await insertMedia(3);
    expect(before[2] - before[0]).toBe(2);

    await migrateToLatest(database.db);
    const drawn = await insertMedia(20);
    for (const id of drawn) expect(Number.isSafeInteger(id) && id >= 1).toBe(true);
    expect(new Set(drawn).size).toBe(20);
    // Twenty ids in a row from one sequence would lie within 20 of each other.
    expect(Math.max(...drawn) - Math.min(...drawn)).toBeGreaterThan(1_000_000);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM media WHERE id = ANY(${before})`.execute(
      database.db,
    );
    expect(rows[0].n).toBe(3);

    await migrateTo(database.db, '0012-search-embeddings');
    const [next] = await insertMedia(1);
    expect(next).toBeGreaterThan(Math.max(...before, ...drawn));
    await migrateToLatest(database.db);
  });
});

describe.runIf(engine === 'pglite')('migration 0016 (webhook header secrets)', () => {
  it('marks the header values stored before it as plain text, to be sealed at start, and can be undone', async () => {
    const db = database.db;
    await migrateTo(db, '0015-domain-events');
    const businessId = newId();
    const [withHeaders, without] = [newId(), newId()];
    // Any text: a value may begin like a sealed one.
    const headers = { Authorization: 'Bearer legacy', 'X-Host': 'sb1.acme.example' };
    await sql`INSERT INTO businesses (id, name) VALUES (${businessId}, 'Hooks')`.execute(db);
    await sql`INSERT INTO webhooks (business_id, id, event, url, headers, secret) VALUES
      (${businessId}, ${withHeaders}, 'message_created', 'https://a.example/in', ${JSON.stringify(headers)}, 'whsec_a'),
      (${businessId}, ${without}, 'message_created', 'https://b.example/in', '{}', 'whsec_b')`.execute(db);

    await migrateToLatest(db);
    const rows = await db
      .selectFrom('webhooks')
      .select(['id', 'headers', 'headers_sealed'])
      .where('business_id', '=', businessId)
      .execute();
    expect(Object.fromEntries(rows.map((r) => [r.id, [r.headers, r.headers_sealed]]))).toEqual({
      [withHeaders]: [headers, false],
      [without]: [{}, true],
    });

    await migrateTo(db, '0015-domain-events');
    const { rows: after } = await sql<{
      headers: unknown;
    }>`SELECT headers FROM webhooks WHERE id = ${withHeaders}`.execute(db);
    expect(after[0].headers).toEqual(headers);
    await migrateToLatest(db);
  });
});

describe.runIf(engine === 'pglite')('migration 0019 (contact identities)', () => {
  it('names each phone and email of the contacts there are, and of their aliases, by its oldest holder; undone, it leaves no trace', async () => {
    const db = database.db;
    await migrateTo(db, '0018-outbox-owners');
    const businessId = newId();
    const [a, b, c, d] = [newId(), newId(), newId(), newId()];
    await sql`INSERT INTO businesses (id, name) VALUES (${businessId}, 'Before identities')`.execute(db);
    await sql`INSERT INTO contacts (business_id, id, phone_number, phone_key, email, created_at) VALUES
      (${businessId}, ${a}, '5491155550101', '541155550101', 'Mixed@Case.com', '2020-01-01T00:00:00Z'),
      (${businessId}, ${b}, '541155550101', '541155550101', NULL, '2019-01-01T00:00:00Z'),
      (${businessId}, ${c}, NULL, NULL, 'c@example.com', '2021-01-01T00:00:00Z'),
      (${businessId}, ${d}, NULL, NULL, NULL, '2018-01-01T00:00:00Z')`.execute(db);
    await sql`INSERT INTO contact_aliases (business_id, kind, value, contact_id) VALUES
      (${businessId}, 'phone', '34612345678', ${c}),
      (${businessId}, 'email', 'mixed@case.com', ${d})`.execute(db);

    await migrateToLatest(db);
    const identities = await db
      .selectFrom('contact_identities')
      .select(['kind', 'value', 'contact_id'])
      .where('business_id', '=', businessId)
      .orderBy('kind')
      .orderBy('value')
      .execute();
    expect(identities).toEqual([
      { kind: 'email', value: 'c@example.com', contact_id: c },
      { kind: 'email', value: 'mixed@case.com', contact_id: d },
      { kind: 'phone', value: '34612345678', contact_id: c },
      { kind: 'phone', value: '541155550101', contact_id: b },
    ]);

    await migrateTo(db, '0018-outbox-owners');
    const { rows: left } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'contact_identities%'`.execute(db);
    expect(left[0].n).toBe(0);
    await migrateToLatest(db);
  });
});

describe.runIf(engine === 'pglite')('migration 0021 (dashboard sign-in)', () => {
  it("makes each business's first user its owner and the others admins; undone, it leaves no trace", async () => {
    const db = database.db;
    await migrateTo(db, '0019-contact-identities');
    const [acme, solo] = [newId(), newId()];
    const [first, second, third, only] = [newId(), newId(), newId(), newId()];
    await sql`INSERT INTO businesses (id, name) VALUES (${acme}, 'Acme'), (${solo}, 'Solo')`.execute(db);
    await sql`INSERT INTO users (business_id, id, email, name, created_at) VALUES
      (${acme}, ${second}, 'b@acme.test', 'B', '2021-01-01T00:00:00Z'),
      (${acme}, ${first}, 'a@acme.test', 'A', '2020-01-01T00:00:00Z'),
      (${acme}, ${third}, 'c@acme.test', 'C', '2022-01-01T00:00:00Z'),
      (${solo}, ${only}, 'a@acme.test', 'Solo', '2023-01-01T00:00:00Z')`.execute(db);

    await migrateToLatest(db);
    const roles = await db
      .selectFrom('users')
      .select(['id', 'role'])
      .where('business_id', 'in', [acme, solo])
      .execute();
    expect(Object.fromEntries(roles.map((u) => [u.id, u.role]))).toEqual({
      [first]: 'owner',
      [second]: 'admin',
      [third]: 'admin',
      [only]: 'owner',
    });

    await migrateTo(db, '0019-contact-identities');
    const { rows: left } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'dashboard_%' OR relname = 'users_sign_in'`.execute(
      db,
    );
    expect(left[0].n).toBe(0);
    const { rows: columns } = await sql<{ column_name: string }>`
      SELECT column_name FROM information_schema.columns WHERE table_name = 'users' ORDER BY column_name`.execute(db);
    expect(columns.map((c) => c.column_name)).toEqual([
      'business_id',
      'created_at',
      'email',
      'id',
      'name',
      'password_hash',
    ]);
    await migrateToLatest(db);
  });
});

describe.runIf(engine === 'pglite')('migration 0022 (inbox)', () => {
  it('adds the read positions and the inbox indexes, and can be undone', async () => {
    const db = database.db;
    await migrateToLatest(db);
    const relations = async () => {
      const { rows } = await sql<{ relname: string }>`
        SELECT relname FROM pg_class
        WHERE relname IN ('conversation_reads', 'events_conversation', 'events_conversation_time', 'messages_inbound')
           OR relname LIKE 'conversations_inbox%' OR relname LIKE 'contacts_%name'
        ORDER BY relname`.execute(db);
      return rows.map((r) => r.relname);
    };
    const added = [
      'contacts_full_name',
      'contacts_last_name',
      'conversation_reads',
      'conversations_inbox',
      'conversations_inbox_assignee',
      'conversations_inbox_channel',
      'conversations_inbox_channel_type',
      'conversations_inbox_control',
      'conversations_inbox_team',
      'events_conversation_time',
      'messages_inbound',
    ];
    expect(await relations()).toEqual(added);

    await migrateTo(db, '0021-dashboard-auth');
    expect(await relations()).toEqual(['events_conversation']);
    await migrateToLatest(db);
    expect(await relations()).toEqual(added);
  });
});

describe.runIf(engine === 'pglite')('migration 0029 (merged contacts)', () => {
  it("stops a conversation's new contact from rewriting its rows' export flags; undone, unfinished moves end", async () => {
    const db = database.db;
    await migrateToLatest(db);
    const trigger = async () => {
      const { rows } = await sql<{ def: string }>`
        SELECT pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE tgname = 'conversations_export_flags'`.execute(db);
      return rows[0].def;
    };
    expect(await trigger()).not.toContain('contact_id');

    // A merge whose move had not ended: the loser hidden, its message and event still its own.
    const [businessId, survivor, loser, conversation] = [newId(), newId(), newId(), newId()];
    await sql`INSERT INTO businesses (id, name) VALUES (${businessId}, 'Merging')`.execute(db);
    await sql`INSERT INTO contacts (business_id, id, created_at) VALUES
      (${businessId}, ${survivor}, now()), (${businessId}, ${loser}, now())`.execute(db);
    await sql`UPDATE contacts SET merged_into = ${survivor} WHERE id = ${loser}`.execute(db);
    await sql`INSERT INTO conversations (business_id, id, contact_id, channel)
      VALUES (${businessId}, ${conversation}, ${survivor}, 'whatsapp')`.execute(db);
    await sql`INSERT INTO messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type, status)
      VALUES (${businessId}, ${newId()}, ${conversation}, ${loser}, 'whatsapp', 'inbound', 'contact', 'RECEIVED')`.execute(
      db,
    );
    await sql`INSERT INTO events (business_id, id, type, conversation_id, contact_id, channel, actor_type)
      VALUES (${businessId}, ${newId()}, 'conversation_resolved', ${conversation}, ${loser}, 'whatsapp', 'system')`.execute(
      db,
    );

    await migrateTo(db, '0028-contacts-assigned-user');
    expect(await trigger()).toContain('contact_id');
    const owners = async (table: 'messages' | 'events') => {
      const { rows } = await sql<{ contact_id: string }>`
        SELECT contact_id FROM ${sql.table(table)} WHERE business_id = ${businessId}`.execute(db);
      return rows.map((r) => r.contact_id);
    };
    expect(await owners('messages')).toEqual([survivor]);
    expect(await owners('events')).toEqual([survivor]);
    const { rows: contacts } = await sql<{ id: string }>`
      SELECT id FROM contacts WHERE business_id = ${businessId}`.execute(db);
    expect(contacts).toEqual([{ id: survivor }]);
    await migrateToLatest(db);
    expect(await trigger()).not.toContain('contact_id');
  });
});

describe.runIf(engine === 'pglite')('migration 0033 (AI timers)', () => {
  it('adds its run statuses to those the check allows, keeping those of the migrations before it, and can be undone', async () => {
    const db = database.db;
    const allowed = async () => {
      const { rows } = await sql<{ def: string }>`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE conrelid = 'ai_runs'::regclass AND conname = 'ai_runs_status_check'`.execute(db);
      return [...rows[0].def.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]).sort();
    };
    await migrateTo(db, '0032-ai-tools');
    const before = await allowed();
    expect(before).toContain('resolved');

    await migrateToLatest(db);
    expect(await allowed()).toEqual([...before, 'analyzed', 'failed'].sort());
    await migrateTo(db, '0032-ai-tools');
    expect(await allowed()).toEqual(before);
    await migrateToLatest(db);
  });
});

describe.runIf(engine === 'pglite')('migration 0035 (AI token usage)', () => {
  it("counts today's tokens from the runs already recorded, and yesterday's runs not", async () => {
    const db = database.db;
    await migrateTo(db, '0033-ai-timers');
    const [businessId, contactId, conversationId, agentId] = [newId(), newId(), newId(), newId()];
    await sql`INSERT INTO businesses (id, name) VALUES (${businessId}, 'Tokens')`.execute(db);
    await sql`INSERT INTO contacts (business_id, id, phone_number) VALUES (${businessId}, ${contactId}, '+34600999111')`.execute(
      db,
    );
    await sql`INSERT INTO conversations (business_id, id, contact_id, channel)
      VALUES (${businessId}, ${conversationId}, ${contactId}, 'whatsapp')`.execute(db);
    const call = (tokensIn: number, tokensOut: number | null) =>
      JSON.stringify([{ model: 'm', tokens_in: tokensIn, tokens_out: tokensOut, latency_ms: 1 }]);
    await sql`INSERT INTO ai_runs (business_id, id, conversation_id, agent_id, trigger_message_id, model_calls, created_at)
      VALUES (${businessId}, ${newId()}, ${conversationId}, ${agentId}, ${newId()}, ${call(100, 20)}::jsonb, now()),
        (${businessId}, ${newId()}, ${conversationId}, ${agentId}, ${newId()}, ${call(7, null)}::jsonb, now()),
        (${businessId}, ${newId()}, ${conversationId}, ${agentId}, ${newId()}, ${call(5000, 5000)}::jsonb,
          now() - interval '2 days')`.execute(db);

    await migrateToLatest(db);
    const { rows } = await sql<{ tokens: string }>`SELECT tokens FROM ai_token_usage
      WHERE business_id = ${businessId}`.execute(db);
    expect(rows.map((r) => Number(r.tokens))).toEqual([127]);
    await migrateTo(db, '0033-ai-timers');
    await migrateToLatest(db);
  });
});

describe.runIf(engine === 'pglite')('migrations 0044-0046 (keys led by business)', () => {
  it('gives pending events their business, moves provider accounts to channel_accounts, and can be undone', async () => {
    const db = database.db;
    await migrateTo(db, '0042-channel-links');
    const [businessId, other, channelId, bare] = [newId(), newId(), newId(), newId()];
    const subjectId = newId();
    await sql`INSERT INTO businesses (id, name) VALUES (${businessId}, 'Keys'), (${other}, 'Other')`.execute(db);
    await sql`INSERT INTO channels (business_id, id, type, name, identifier, provider_kind, provider_account)
      VALUES (${businessId}, ${channelId}, 'whatsapp', 'Sales', '15550001', 'whatsapp_cloud', 'acct-1'),
        (${other}, ${bare}, 'whatsapp_web', 'Web', '15550002', null, null)`.execute(db);
    const { rows: events } = await sql<{ id: number }>`INSERT INTO domain_events (business_id, type, subject_id)
      VALUES (${businessId}, 'message_created', ${subjectId}), (${other}, 'message_created', ${subjectId})
      RETURNING id`.execute(db);
    await sql`DELETE FROM domain_event_pending WHERE event_id = ANY(${events.map((e) => e.id)}::bigint[])`.execute(db);
    await sql`INSERT INTO domain_event_pending (subscriber, event_id)
      VALUES ('webhooks', ${events[0].id}), ('webhooks', ${events[1].id})`.execute(db);

    await migrateToLatest(db);
    const { rows: pending } = await sql<{ business_id: string; event_id: number }>`SELECT business_id, event_id
      FROM domain_event_pending WHERE subscriber = 'webhooks' AND event_id = ANY(${events.map((e) => e.id)}::bigint[])
      ORDER BY event_id`.execute(db);
    expect(pending.map((p) => p.business_id)).toEqual([businessId, other]);
    const { rows: accounts } =
      await sql`SELECT * FROM channel_accounts WHERE business_id IN (${businessId}, ${other})`.execute(db);
    expect(accounts).toEqual([
      { provider_kind: 'whatsapp_cloud', provider_account: 'acct-1', business_id: businessId, channel_id: channelId },
    ]);
    // The account stays one channel's across businesses.
    await expect(
      sql`INSERT INTO channel_accounts VALUES ('whatsapp_cloud', 'acct-1', ${other}, ${bare})`.execute(db),
    ).rejects.toMatchObject({ code: '23505' });

    await migrateTo(db, '0042-channel-links');
    const { rows: restored } = await sql<{ event_id: number }>`SELECT event_id FROM domain_event_pending
      WHERE subscriber = 'webhooks' AND event_id = ANY(${events.map((e) => e.id)}::bigint[])`.execute(db);
    expect(restored).toHaveLength(2);
    await expect(
      sql`UPDATE channels SET provider_kind = 'whatsapp_cloud', provider_account = 'acct-1' WHERE id = ${bare}`.execute(
        db,
      ),
    ).rejects.toMatchObject({ code: '23505' });
    await migrateToLatest(db);
  });
});
