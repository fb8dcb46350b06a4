import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { call, createUser, signIn } from '../dashboard-auth/dashboard-helpers.ts';
import { getReport, insertAgent, insertEvent, insertFollowUpRun, setTimeZone } from './report-helpers.ts';

/**
 * Each report's definitions on a small history checked by hand, in São Paulo's zone (UTC-3 all year):
 * the period 2026-03-02 (a Monday) to 2026-03-03 runs from 03:00Z on the 2nd to 03:00Z on the 4th.
 */

let t: TestApp;
let acme: Tenant;
let other: Tenant;
let una: string;
let otherUser: string;
let agent: string;
const conv: Record<string, { id: string; contact_id: string; channel: string }> = {};

const PERIOD = 'since=2026-03-02&until=2026-03-03';
const tableOf = async (report: string, name: string, query = PERIOD, tenant = acme) => {
  const res = await getReport(t.app, tenant.businessId, report, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().tables[name].rows as Record<string, unknown>[];
};

beforeAll(async () => {
  t = await buildTestApp();
  const db = t.database.db;
  acme = await createTenant(t.app, 'Acme');
  other = await createTenant(t.app, 'Other');
  await setTimeZone(t.app, acme.businessId, 'America/Sao_Paulo');
  await t.app.inject({
    method: 'PATCH',
    url: `/admin/v1/businesses/${acme.businessId}`,
    headers: adminHeaders,
    payload: { ai_daily_token_budget: 10_000 },
  });
  una = (
    await createUser(t.app, acme.businessId, {
      email: 'una@acme.test',
      name: 'Una',
      password: 'correct horse 1',
      role: 'admin',
    })
  ).id;
  await createUser(t.app, acme.businessId, {
    email: 'vic@acme.test',
    name: 'Vic',
    password: 'correct horse 2',
    role: 'agent',
  });
  otherUser = (await createUser(t.app, other.businessId, { email: 'o@other.test', name: 'Oz' })).id;
  agent = await insertAgent(db, acme.businessId, 'Ava');
  const b = acme.businessId;
  const contact = await insertContact(db, b);
  const open = async (name: string, channel: string, created_at: string) => {
    conv[name] = await insertConversation(db, b, contact.id, { channel, created_at, agent_id: agent });
  };
  const msg = (name: string, created_at: string, sender_type: string, extra: Record<string, unknown> = {}) =>
    insertMessage(db, b, conv[name], {
      created_at,
      sender_type: sender_type as never,
      direction: sender_type === 'contact' ? 'inbound' : 'outbound',
      status: sender_type === 'contact' ? 'RECEIVED' : 'SENT',
      ...extra,
    });
  // A: opened the evening before the period; its question at local midnight, the AI answers in 60 s,
  // Una writes too, resolved an hour after the question.
  await open('A', 'whatsapp', '2026-03-02T02:30:00Z');
  await msg('A', '2026-03-02T02:59:00Z', 'contact');
  await msg('A', '2026-03-02T03:00:00Z', 'contact');
  await msg('A', '2026-03-02T03:01:00Z', 'ai_agent', { agent_id: agent });
  await msg('A', '2026-03-02T03:05:00Z', 'human', { user_id: una });
  await insertEvent(db, b, conv.A, {
    type: 'conversation_resolved',
    created_at: '2026-03-02T04:00:00Z',
    actor_type: 'human',
    user_id: una,
  });
  // B: email, the business's API answers in 120 s; Una takes manual control for 10 minutes.
  await open('B', 'email', '2026-03-03T12:00:00Z');
  await msg('B', '2026-03-03T12:00:00Z', 'contact');
  await insertEvent(db, b, conv.B, {
    type: 'manual_control_activated',
    created_at: '2026-03-03T12:01:00Z',
    actor_type: 'human',
    user_id: una,
    data: { reason: 'angry' },
  });
  await msg('B', '2026-03-03T12:02:00Z', 'api');
  await insertEvent(db, b, conv.B, {
    type: 'manual_control_released',
    created_at: '2026-03-03T12:11:00Z',
    data: { reason: 'x' },
  });
  // C: a question one second before the period's end, unanswered.
  await open('C', 'whatsapp', '2026-03-04T02:59:59Z');
  await msg('C', '2026-03-04T02:59:59Z', 'contact');
  // D: the AI alone, in 30 s, with a follow-up, a transfer without a target and a positive sentiment.
  await open('D', 'whatsapp', '2026-03-02T10:00:00Z');
  await msg('D', '2026-03-02T10:00:00Z', 'contact');
  await msg('D', '2026-03-02T10:00:30Z', 'ai_agent', { agent_id: agent });
  const followUp = await msg('D', '2026-03-02T11:00:00Z', 'ai_agent', { agent_id: agent });
  await insertFollowUpRun(db, b, conv.D.id, agent, followUp.id);
  await insertEvent(db, b, conv.D, {
    type: 'transfer_fallback_required',
    created_at: '2026-03-02T11:10:00Z',
    actor_type: 'ai_agent',
    agent_id: agent,
    data: { reason: 'no one' },
  });
  await insertEvent(db, b, conv.D, {
    type: 'sentiment_analyzed',
    created_at: '2026-03-02T11:30:00Z',
    actor_type: 'ai_agent',
    agent_id: agent,
    data: { sentiment: 'POSITIVE' },
  });
  // Local 4 March: after the period.
  await insertEvent(db, b, conv.D, {
    type: 'sentiment_analyzed',
    created_at: '2026-03-04T03:30:00Z',
    actor_type: 'ai_agent',
    agent_id: agent,
    data: { sentiment: 'NEGATIVE' },
  });
  await db.insertInto('ai_token_usage').values({ business_id: b, day: '2026-03-02', tokens: 1500 }).execute();
  // A test contact's conversation, left out of every report as the exports leave it out.
  const tester = await insertContact(db, b, { is_test: true });
  const test = await insertConversation(db, b, tester.id, { channel: 'sms', created_at: '2026-03-02T12:00:00Z' });
  await insertMessage(db, b, test, { created_at: '2026-03-02T12:00:00Z' });
  await insertMessage(db, b, test, {
    created_at: '2026-03-02T12:01:00Z',
    sender_type: 'ai_agent',
    direction: 'outbound',
  });
});
afterAll(() => t.close());

describe('the business time zone', () => {
  it('is UTC by default, set by the operator API, and refused when PostgreSQL does not know it', async () => {
    const read = await t.app.inject({
      method: 'GET',
      url: `/admin/v1/businesses/${other.businessId}`,
      headers: adminHeaders,
    });
    expect(read.json().business.time_zone).toBe('UTC');
    for (const bad of ['Mars/Olympus', 'utc+3; drop table', '']) {
      const res = await t.app.inject({
        method: 'PATCH',
        url: `/admin/v1/businesses/${other.businessId}`,
        headers: adminHeaders,
        payload: { time_zone: bad },
      });
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error.code).toBe('validation_error');
    }
    const res = await getReport(t.app, acme.businessId, 'volume', PERIOD);
    expect(res.json()).toMatchObject({
      report: 'volume',
      since: '2026-03-02',
      until: '2026-03-03',
      time_zone: 'America/Sao_Paulo',
    });
  });
});

describe('volume', () => {
  it('counts by local day and channel, and every weekday-hour cell, without test contacts', async () => {
    expect(await tableOf('volume', 'by_channel')).toEqual([
      { channel: 'email', conversations_opened: 1, messages_in: 1, messages_out: 1 },
      { channel: 'whatsapp', conversations_opened: 2, messages_in: 3, messages_out: 4 },
    ]);
    expect(await tableOf('volume', 'daily')).toEqual([
      { date: '2026-03-02', channel: 'email', conversations_opened: 0, messages_in: 0, messages_out: 0 },
      { date: '2026-03-02', channel: 'whatsapp', conversations_opened: 1, messages_in: 2, messages_out: 4 },
      { date: '2026-03-03', channel: 'email', conversations_opened: 1, messages_in: 1, messages_out: 1 },
      { date: '2026-03-03', channel: 'whatsapp', conversations_opened: 1, messages_in: 1, messages_out: 0 },
    ]);
    const hours = await tableOf('volume', 'busiest_hours');
    expect(hours).toHaveLength(168);
    expect(hours.filter((h) => h.messages_in !== 0)).toEqual([
      { weekday: 1, hour: 0, messages_in: 1 },
      { weekday: 1, hour: 7, messages_in: 1 },
      { weekday: 2, hour: 9, messages_in: 1 },
      { weekday: 2, hour: 23, messages_in: 1 },
    ]);
  });

  it('keeps the channels asked for', async () => {
    expect(await tableOf('volume', 'by_channel', `${PERIOD}&channel=email,sms`)).toEqual([
      { channel: 'email', conversations_opened: 1, messages_in: 1, messages_out: 1 },
    ]);
  });
});

describe('speed', () => {
  it('measures first responses and resolutions from the first question of the period', async () => {
    expect(await tableOf('speed', 'summary')).toEqual([
      {
        answered_first_by: 'ai',
        conversations: 2,
        first_response_median: 45,
        first_response_p90: 57,
        resolution_median: 3600,
        resolution_p90: 3600,
      },
      {
        answered_first_by: 'person',
        conversations: 1,
        first_response_median: 120,
        first_response_p90: 120,
        resolution_median: null,
        resolution_p90: null,
      },
      {
        answered_first_by: 'all',
        conversations: 4,
        first_response_median: 60,
        first_response_p90: 108,
        resolution_median: 3600,
        resolution_p90: 3600,
      },
    ]);
    expect(await tableOf('speed', 'daily')).toEqual([
      { date: '2026-03-02', answered_first_by: 'ai', first_response_median: 45, first_response_p90: 57 },
      { date: '2026-03-02', answered_first_by: 'person', first_response_median: null, first_response_p90: null },
      { date: '2026-03-02', answered_first_by: 'all', first_response_median: 45, first_response_p90: 57 },
      { date: '2026-03-03', answered_first_by: 'ai', first_response_median: null, first_response_p90: null },
      { date: '2026-03-03', answered_first_by: 'person', first_response_median: 120, first_response_p90: 120 },
      { date: '2026-03-03', answered_first_by: 'all', first_response_median: 120, first_response_p90: 120 },
    ]);
  });
});

describe('ai', () => {
  it('counts the AI conversations, those it handled alone, handoffs, transfers, follow-ups and tokens', async () => {
    expect(await tableOf('ai', 'summary')).toEqual([
      {
        conversations: 2,
        handled_by_ai_only: 1,
        ai_only_share: 0.5,
        handoffs: 1,
        handoff_rate: 0,
        transfers_accepted: 0,
        transfers_rejected: 0,
        transfers_without_target: 1,
        follow_ups_sent: 1,
      },
    ]);
    expect(await tableOf('ai', 'handoff_reasons')).toEqual([{ reason: 'angry', count: 1 }]);
    expect(await tableOf('ai', 'tokens')).toEqual([
      { date: '2026-03-02', tokens: 1500, budget: 10_000 },
      { date: '2026-03-03', tokens: 0, budget: 10_000 },
    ]);
  });
});

describe('team', () => {
  it("gives each person's replies, first responses and time in manual control", async () => {
    expect(await tableOf('team', 'users')).toEqual([
      {
        user_id: una,
        name: 'Una',
        conversations_handled: 1,
        replies_sent: 1,
        first_response_median: null,
        manual_control_seconds: 600,
      },
      expect.objectContaining({ name: 'Vic', conversations_handled: 0, replies_sent: 0, manual_control_seconds: 0 }),
    ]);
  });
});

describe('sentiment', () => {
  it('counts the analyses per local day and per AI agent', async () => {
    expect(await tableOf('sentiment', 'daily')).toEqual([
      { date: '2026-03-02', positive: 1, neutral: 0, negative: 0 },
      { date: '2026-03-03', positive: 0, neutral: 0, negative: 0 },
    ]);
    expect(await tableOf('sentiment', 'by_agent')).toEqual([
      { agent_id: agent, agent_name: 'Ava', positive: 1, neutral: 0, negative: 0 },
    ]);
  });
});

describe('filters and tenancy', () => {
  it("matches nothing with another business's ids, and shows nothing of another business", async () => {
    const foreign = `${PERIOD}&user_id=${otherUser}`;
    expect(await tableOf('volume', 'by_channel', foreign)).toEqual([]);
    expect(await tableOf('team', 'users', foreign)).toEqual([]);
    expect(await tableOf('volume', 'by_channel', PERIOD, other)).toEqual([]);
    expect((await tableOf('ai', 'summary', PERIOD, other))[0]).toMatchObject({ conversations: 0, ai_only_share: null });
    const res = await getReport(t.app, other.businessId, 'team', PERIOD);
    expect(JSON.stringify(res.json())).not.toContain(una);
  });

  it('selects conversations by their AI agent', async () => {
    expect(await tableOf('speed', 'summary', `${PERIOD}&agent_id=${agent}`)).toHaveLength(3);
    expect((await tableOf('volume', 'by_channel', `${PERIOD}&agent_id=${agent}`)).length).toBe(2);
  });
});

describe('CSV', () => {
  it('sends one table with a header row, RFC 4180 quoting and a file name', async () => {
    await t.database.db.updateTable('users').set({ name: 'Una "U", Jr.' }).where('id', '=', una).execute();
    const res = await getReport(t.app, acme.businessId, 'team', `${PERIOD}&format=csv&table=users`);
    await t.database.db.updateTable('users').set({ name: 'Una' }).where('id', '=', una).execute();
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename=team-users-2026-03-02-2026-03-03.csv');
    expect(res.body.split('\r\n').slice(0, 2)).toEqual([
      'user_id,name,conversations_handled,replies_sent,first_response_median,manual_control_seconds',
      `${una},"Una ""U"", Jr.",1,1,,600`,
    ]);
  });

  it('writes text a spreadsheet would run as a formula as text', async () => {
    await t.database.db.updateTable('users').set({ name: '=HYPERLINK("http://x")' }).where('id', '=', una).execute();
    const res = await getReport(t.app, acme.businessId, 'team', `${PERIOD}&format=csv&table=users`);
    await t.database.db.updateTable('users').set({ name: 'Una' }).where('id', '=', una).execute();
    expect(res.body.split('\r\n')[1]).toBe(`${una},"'=HYPERLINK(""http://x"")",1,1,,600`);
  });
});

describe('the last days', () => {
  /** The day at `hours` from UTC now, `YYYY-MM-DD`. */
  const dayAt = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString().slice(0, 10);
  /** The day `n` days before `day`. */
  const before = (day: string, n: number) =>
    new Date(Date.parse(`${day}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);
  /** An answer's body, its `until` checked to be the local day (at `hours` from UTC) before or after asking. */
  const endingToday = async (ask: () => Promise<{ statusCode: number; body: string }>, hours: number) => {
    const first = dayAt(hours);
    const res = await ask();
    expect(res.statusCode, res.body).toBe(200);
    const body = JSON.parse(res.body) as {
      since: string;
      until: string;
      time_zone: string;
      tables: Record<string, { rows: unknown[] }>;
    };
    // A local midnight between the two readings makes either day right.
    expect([first, dayAt(hours)]).toContain(body.until);
    return body;
  };

  it("end today in the business's zone, whatever the UTC day", async () => {
    // Twelve hours behind UTC in its morning, fourteen ahead in its afternoon: another day than UTC's.
    const { zone, hours } =
      new Date().getUTCHours() < 12 ? { zone: 'Etc/GMT+12', hours: -12 } : { zone: 'Etc/GMT-14', hours: 14 };
    const far = await createTenant(t.app, 'Far');
    await setTimeZone(t.app, far.businessId, zone);
    expect(dayAt(hours)).not.toBe(dayAt(0));
    const ask = (report: string, query: string) =>
      endingToday(() => getReport(t.app, far.businessId, report, query), hours);
    const week = await ask('volume', 'last_days=7');
    expect(week).toMatchObject({ since: before(week.until, 6), time_zone: zone });
    const one = await ask('sentiment', 'last_days=1');
    expect(one.since).toBe(one.until);
    expect(one.tables.daily.rows).toEqual([{ date: one.until, positive: 0, neutral: 0, negative: 0 }]);
    const year = await ask('speed', 'last_days=366');
    expect(year.since).toBe(before(year.until, 365));
    expect(year.tables.daily.rows).toHaveLength(366 * 3);
  });

  it('name the CSV file by the days they resolve to, and serve the dashboard alike', async () => {
    // São Paulo: three hours behind UTC all year.
    const body = await endingToday(() => getReport(t.app, acme.businessId, 'team', 'last_days=2'), -3);
    expect(body).toMatchObject({ since: before(body.until, 1), time_zone: 'America/Sao_Paulo' });
    const first = dayAt(-3);
    const csv = await getReport(t.app, acme.businessId, 'team', 'last_days=2&format=csv&table=users');
    expect(csv.statusCode, csv.body).toBe(200);
    expect(
      [first, dayAt(-3)].map((today) => `attachment; filename=team-users-${before(today, 1)}-${today}.csv`),
    ).toContain(csv.headers['content-disposition']);
    const admin = await signIn(t.app, 'una@acme.test', 'correct horse 1');
    const dashboard = await endingToday(
      () => call(t.app, admin, 'GET', '/reports/volume?last_days=30&channel=email'),
      -3,
    );
    expect(dashboard).toMatchObject({ since: before(dashboard.until, 29), filters: { channel: ['email'] } });
  });
});

describe('bad input', () => {
  it.each([
    ['volume', 'since=2026-02-30&until=2026-03-03'],
    ['volume', 'since=2026-3-02&until=2026-03-03'],
    ['volume', 'until=2026-03-03'],
    ['volume', 'since=2026-03-02'],
    ['volume', ''],
    ['volume', 'channel=email'],
    ['volume', `${PERIOD}&last_days=7`],
    ['volume', 'since=2026-03-02&last_days=7'],
    ['volume', 'until=2026-03-03&last_days=7'],
    ['volume', 'last_days=0'],
    ['volume', 'last_days=367'],
    ['volume', 'last_days=1.5'],
    ['volume', 'last_days=seven'],
    ['volume', 'last_days='],
    ['volume', 'last_days=7&last_days=8'],
    ['volume', 'last_days=7&colour=red'],
    ['volume', 'since=2026-03-04&until=2026-03-03'],
    ['volume', 'since=2025-03-01&until=2026-03-02'],
    ['volume', `${PERIOD}&channel=fax`],
    ['volume', `${PERIOD}&channel=`],
    ['volume', `${PERIOD}&team_id=nope`],
    ['volume', `${PERIOD}&colour=red`],
    ['volume', `${PERIOD}&format=csv`],
    ['volume', `${PERIOD}&table=daily`],
    ['volume', `${PERIOD}&format=csv&table=users`],
    ['weather', PERIOD],
  ])('%s?%s answers 400 with the error body', async (report, query) => {
    const res = await getReport(t.app, acme.businessId, report, query);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.code).toBe('validation_error');
  });

  it('takes a period of 366 days', async () => {
    expect((await getReport(t.app, acme.businessId, 'volume', 'since=2024-01-01&until=2024-12-31')).statusCode).toBe(
      200,
    );
  });
});

describe('the dashboard', () => {
  it('serves the same body to admins and owners, and refuses agents', async () => {
    const admin = await signIn(t.app, 'una@acme.test', 'correct horse 1');
    const res = await call(t.app, admin, 'GET', `/reports/ai?${PERIOD}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual((await getReport(t.app, acme.businessId, 'ai', PERIOD)).json());
    const agentUser = await signIn(t.app, 'vic@acme.test', 'correct horse 2');
    const refused = await call(t.app, agentUser, 'GET', `/reports/ai?${PERIOD}`);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('forbidden');
  });
});
