import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { insertContact, insertConversation, insertMessage } from '../../helpers/factories.ts';
import { fuzzOptions } from '../../helpers/schema-arbitraries.ts';
import { createTenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { getReport, insertAgent, insertEvent, insertFollowUpRun, setTimeZone } from './report-helpers.ts';

/**
 * Every table of every report against a model: generated histories (conversations on several
 * channels with assignees, messages of every sender type, manual control, transfers, resolutions,
 * sentiments, follow-ups, token usage) at instants crowding the business's local midnights, in a
 * zone west of UTC or a half-hour one east of it, over any period of those days and any filter. The
 * model computes each figure from the same generated rows in TypeScript, by the definitions of
 * docs/REPORTS.md.
 */

const FUZZ = fuzzOptions(16);
const ZONES = ['America/Sao_Paulo', 'Asia/Kolkata'] as const;
const CHANNELS = ['whatsapp', 'email', 'sms'] as const;
const SENDERS = ['contact', 'ai_agent', 'human', 'api', 'automation'] as const;
const EVENT_TYPES = [
  'manual_control_activated',
  'manual_control_released',
  'transfer_accepted',
  'transfer_rejected',
  'transfer_fallback_required',
  'sentiment_analyzed',
  'conversation_resolved',
] as const;
const DAYS = ['2026-03-01', '2026-03-02', '2026-03-03', '2026-03-04'];
const ORIGIN = Date.UTC(2026, 2, 1);
/** Local midnights of the days in each zone, in ms after ORIGIN, where the generated instants crowd. */
const MIDNIGHTS: Record<(typeof ZONES)[number], number> = {
  'America/Sao_Paulo': 3 * 3_600_000,
  'Asia/Kolkata': -5.5 * 3_600_000,
};

interface Gen {
  zone: (typeof ZONES)[number];
  conversations: { channel: string; at: number; team: boolean; user: number | null; agent: boolean }[];
  messages: { conversation: number; at: number; sender: (typeof SENDERS)[number]; user: number; followUp: boolean }[];
  events: {
    conversation: number;
    at: number;
    type: (typeof EVENT_TYPES)[number];
    byUser: number | null;
    agent: boolean;
    reason: string | null;
    sentiment: string;
  }[];
  tokens: [number, number][];
  since: number;
  length: number;
  filter:
    | { kind: 'none' }
    | { kind: 'channel'; channels: string[] }
    | { kind: 'team' | 'agent' | 'foreign' }
    | { kind: 'user'; user: number };
}

/** An instant in ms after ORIGIN: near a local midnight (a second or a minute either side), or anywhere. */
const instant = (zone: Gen['zone']) =>
  fc.oneof(
    fc
      .tuple(fc.integer({ min: 0, max: 4 }), fc.constantFrom(-60_000, -1000, 0, 1000, 60_000))
      .map(([day, delta]) => MIDNIGHTS[zone] + day * 86_400_000 + delta),
    fc.integer({ min: 0, max: 4 * 86_400 - 1 }).map((s) => s * 1000),
  );

const gen: fc.Arbitrary<Gen> = fc.constantFrom(...ZONES).chain((zone) =>
  fc.record({
    zone: fc.constant(zone),
    conversations: fc.array(
      fc.record({
        channel: fc.constantFrom(...CHANNELS),
        at: instant(zone),
        team: fc.boolean(),
        user: fc.option(fc.integer({ min: 0, max: 1 })),
        agent: fc.boolean(),
      }),
      { minLength: 1, maxLength: 5 },
    ),
    messages: fc.array(
      fc.record({
        conversation: fc.nat(),
        at: instant(zone),
        sender: fc.constantFrom(...SENDERS, 'contact', 'ai_agent'),
        user: fc.integer({ min: 0, max: 1 }),
        followUp: fc.boolean(),
      }),
      { maxLength: 24 },
    ),
    events: fc.array(
      fc.record({
        conversation: fc.nat(),
        at: instant(zone),
        type: fc.constantFrom(...EVENT_TYPES),
        byUser: fc.option(fc.integer({ min: 0, max: 1 })),
        agent: fc.boolean(),
        reason: fc.constantFrom('price', 'angry', null),
        sentiment: fc.constantFrom('POSITIVE', 'NEUTRAL', 'NEGATIVE'),
      }),
      { maxLength: 12 },
    ),
    tokens: fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 100_000 })), { maxLength: 3 }),
    since: fc.integer({ min: 0, max: 3 }),
    length: fc.integer({ min: 0, max: 3 }),
    filter: fc.oneof(
      fc.constant({ kind: 'none' as const }),
      fc.subarray([...CHANNELS], { minLength: 1 }).map((channels) => ({ kind: 'channel' as const, channels })),
      fc.constantFrom({ kind: 'team' as const }, { kind: 'agent' as const }, { kind: 'foreign' as const }),
      fc.integer({ min: 0, max: 1 }).map((user) => ({ kind: 'user' as const, user })),
    ),
  }),
);

let t: TestApp;
let foreign: { user: string; team: string };

beforeAll(async () => {
  t = await buildTestApp();
  const other = await createTenant(t.app, 'Other');
  foreign = { user: await insertUser(other.businessId, 'Oz'), team: await insertTeam(other.businessId) };
});
afterAll(() => t.close());

async function insertUser(businessId: string, name: string) {
  const id = newId();
  await t.database.db
    .insertInto('users')
    .values({
      business_id: businessId,
      id,
      email: `${id}@x.test`,
      name,
      password_hash: null,
      created_at: new Date().toISOString(),
    })
    .execute();
  return id;
}
async function insertTeam(businessId: string) {
  const id = newId();
  await t.database.db
    .insertInto('teams')
    .values({ business_id: businessId, id, name: 'T', created_at: new Date().toISOString() })
    .execute();
  return id;
}

const iso = (ms: number) => new Date(ORIGIN + ms).toISOString();
/** The local day (YYYY-MM-DD), ISO weekday and hour of an instant in the zone, as Intl reads it. */
function local(zone: string, ms: number) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      hourCycle: 'h23',
      weekday: 'short',
    })
      .formatToParts(new Date(ORIGIN + ms))
      .map((p) => [p.type, p.value]),
  );
  const weekday = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(parts.weekday) + 1;
  return { day: `${parts.year}-${parts.month}-${parts.day}`, weekday, hour: Number(parts.hour) };
}
function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const v = [...values].sort((a, b) => a - b);
  const pos = p * (v.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}
const ms3 = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);

/** Numbers equal to a thousandth (percentiles are interpolated in floating point by both sides). */
function expectRows(actual: Record<string, unknown>[], expected: Record<string, unknown>[], what: string) {
  expect(actual.length, `${what}: ${JSON.stringify(actual)} vs ${JSON.stringify(expected)}`).toBe(expected.length);
  actual.forEach((row, i) => {
    expect(Object.keys(row).sort(), what).toEqual(Object.keys(expected[i]).sort());
    for (const [key, value] of Object.entries(expected[i])) {
      if (typeof value === 'number' && typeof row[key] === 'number')
        expect(
          Math.abs(row[key] - value),
          `${what}[${i}].${key}: ${JSON.stringify(row)} vs ${JSON.stringify(expected[i])}`,
        ).toBeLessThan(0.0011);
      else
        expect(row[key], `${what}[${i}].${key}: ${JSON.stringify(row)} vs ${JSON.stringify(expected[i])}`).toEqual(
          value,
        );
    }
  });
}

it('gives every table the figures the model computes from the same rows', async () => {
  await fc.assert(
    fc.asyncProperty(gen, async (g) => {
      const db = t.database.db;
      const tenant = await createTenant(t.app, 'Model');
      const b = tenant.businessId;
      await setTimeZone(t.app, b, g.zone);
      const users = [await insertUser(b, 'Ann'), await insertUser(b, 'Bob')];
      const team = await insertTeam(b);
      const agent = await insertAgent(db, b, 'Ava');
      const contact = await insertContact(db, b);
      const convs = [];
      for (const c of g.conversations)
        convs.push(
          await insertConversation(db, b, contact.id, {
            channel: c.channel,
            created_at: iso(c.at),
            team_id: c.team ? team : null,
            assigned_user_id: c.user === null ? null : users[c.user],
            agent_id: c.agent ? agent : null,
          }),
        );
      // Each row a distinct millisecond, so "the first after" never meets a tie.
      const messages = g.messages.map((m, i) => ({
        ...m,
        conversation: m.conversation % convs.length,
        at: m.at + i + 1,
      }));
      const events = g.events.map((e, i) => ({
        ...e,
        conversation: e.conversation % convs.length,
        at: e.at + 100 + i,
      }));
      const messageIds: string[] = [];
      for (const m of messages) {
        const inbound = m.sender === 'contact';
        const row = await insertMessage(db, b, convs[m.conversation], {
          created_at: iso(m.at),
          direction: inbound ? 'inbound' : 'outbound',
          sender_type: m.sender,
          status: inbound ? 'RECEIVED' : 'SENT',
          user_id: m.sender === 'human' ? users[m.user] : null,
          agent_id: m.sender === 'ai_agent' ? agent : null,
        });
        messageIds.push(row.id);
        if (m.sender === 'ai_agent' && m.followUp)
          await insertFollowUpRun(db, b, convs[m.conversation].id, agent, row.id);
      }
      for (const e of events) {
        const byHuman = e.type === 'manual_control_activated' && e.byUser !== null;
        await insertEvent(db, b, convs[e.conversation], {
          type: e.type,
          created_at: iso(e.at),
          actor_type: byHuman ? 'human' : e.agent ? 'ai_agent' : 'system',
          user_id: byHuman ? users[e.byUser!] : null,
          agent_id: !byHuman && e.agent ? agent : null,
          data: e.type === 'sentiment_analyzed' ? { sentiment: e.sentiment } : { reason: e.reason },
        });
      }
      const tokenDays = new Map<string, number>();
      for (const [day, tokens] of g.tokens) tokenDays.set(DAYS[day], tokens);
      for (const [day, tokens] of tokenDays)
        await db.insertInto('ai_token_usage').values({ business_id: b, day, tokens }).execute();

      // The model.
      const since = DAYS[g.since];
      const until = DAYS[Math.min(3, g.since + g.length)];
      const days = DAYS.filter((d) => d >= since && d <= until);
      const inPeriod = (ms: number) => {
        const d = local(g.zone, ms).day;
        return d >= since && d <= until;
      };
      const f = g.filter;
      const matches = (i: number) => {
        const c = g.conversations[i];
        if (f.kind === 'channel') return f.channels.includes(c.channel);
        if (f.kind === 'team') return c.team;
        if (f.kind === 'agent') return c.agent;
        if (f.kind === 'user') return c.user === f.user;
        return f.kind === 'none';
      };
      const query = [
        `since=${since}&until=${until}`,
        f.kind === 'channel' ? `channel=${f.channels.join(',')}` : '',
        f.kind === 'team' ? `team_id=${team}` : f.kind === 'agent' ? `agent_id=${agent}` : '',
        f.kind === 'user' ? `user_id=${users[f.user]}` : f.kind === 'foreign' ? `team_id=${foreign.team}` : '',
      ]
        .filter(Boolean)
        .join('&');
      const msgs = messages.filter((m) => inPeriod(m.at) && matches(m.conversation));
      const evs = events.filter((e) => inPeriod(e.at) && matches(e.conversation));
      const report = async (name: string) => {
        const res = await getReport(t.app, b, name, query);
        expect(res.statusCode, res.body).toBe(200);
        return res.json().tables as Record<string, { rows: Record<string, unknown>[] }>;
      };

      // volume
      const cell = new Map<string, { conversations_opened: number; messages_in: number; messages_out: number }>();
      const at = (day: string, channel: string) => {
        const k = `${day}|${channel}`;
        if (!cell.has(k)) cell.set(k, { conversations_opened: 0, messages_in: 0, messages_out: 0 });
        return cell.get(k)!;
      };
      g.conversations.forEach((c, i) => {
        if (inPeriod(c.at) && matches(i)) at(local(g.zone, c.at).day, c.channel).conversations_opened++;
      });
      const hours = new Map<string, number>();
      for (const m of msgs) {
        const l = local(g.zone, m.at);
        const c = at(l.day, g.conversations[m.conversation].channel);
        if (m.sender === 'contact') {
          c.messages_in++;
          hours.set(`${l.weekday} ${l.hour}`, (hours.get(`${l.weekday} ${l.hour}`) ?? 0) + 1);
        } else c.messages_out++;
      }
      const channels = [...new Set([...cell.keys()].map((k) => k.split('|')[1]))].sort();
      const volume = await report('volume');
      expectRows(
        volume.daily.rows,
        days.flatMap((date) => channels.map((channel) => ({ date, channel, ...at(date, channel) }))),
        'volume.daily',
      );
      expectRows(
        volume.by_channel.rows,
        channels.map((channel) => {
          const sum = { channel, conversations_opened: 0, messages_in: 0, messages_out: 0 };
          for (const d of days) {
            const c = at(d, channel);
            sum.conversations_opened += c.conversations_opened;
            sum.messages_in += c.messages_in;
            sum.messages_out += c.messages_out;
          }
          return sum;
        }),
        'volume.by_channel',
      );
      expectRows(
        volume.busiest_hours.rows,
        Array.from({ length: 168 }, (_, i) => {
          const weekday = Math.floor(i / 24) + 1;
          const hour = i % 24;
          return { weekday, hour, messages_in: hours.get(`${weekday} ${hour}`) ?? 0 };
        }),
        'volume.busiest_hours',
      );

      // speed: each conversation's first question in the period, its first answer and resolution after it.
      const answered = g.conversations.flatMap((_, i) => {
        const asked = msgs.filter((m) => m.conversation === i && m.sender === 'contact').map((m) => m.at);
        if (asked.length === 0) return [];
        const t0 = Math.min(...asked);
        const reply = messages
          .filter((m) => m.conversation === i && ['ai_agent', 'human', 'api'].includes(m.sender) && m.at > t0)
          .sort((x, y) => x.at - y.at)[0];
        const resolved = events
          .filter((e) => e.conversation === i && e.type === 'conversation_resolved' && e.at > t0)
          .map((e) => e.at);
        return [
          {
            day: local(g.zone, t0).day,
            by: reply === undefined ? null : reply.sender === 'ai_agent' ? 'ai' : 'person',
            sender: reply?.sender,
            user: reply?.sender === 'human' ? reply.user : null,
            first: reply === undefined ? null : (reply.at - t0) / 1000,
            resolution: resolved.length ? (Math.min(...resolved) - t0) / 1000 : null,
          },
        ];
      });
      const ofGroup = (by: string) => answered.filter((a) => by === 'all' || a.by === by);
      const firsts = (list: typeof answered) => list.flatMap((a) => (a.first === null ? [] : [a.first]));
      const resolutions = (list: typeof answered) => list.flatMap((a) => (a.resolution === null ? [] : [a.resolution]));
      const speed = await report('speed');
      expectRows(
        speed.summary.rows,
        ['ai', 'person', 'all'].map((by) => ({
          answered_first_by: by,
          conversations: ofGroup(by).length,
          first_response_median: ms3(percentile(firsts(ofGroup(by)), 0.5)),
          first_response_p90: ms3(percentile(firsts(ofGroup(by)), 0.9)),
          resolution_median: ms3(percentile(resolutions(ofGroup(by)), 0.5)),
          resolution_p90: ms3(percentile(resolutions(ofGroup(by)), 0.9)),
        })),
        'speed.summary',
      );
      expectRows(
        speed.daily.rows,
        days.flatMap((date) =>
          ['ai', 'person', 'all'].map((by) => {
            const list = firsts(ofGroup(by).filter((a) => a.day === date));
            return {
              date,
              answered_first_by: by,
              first_response_median: ms3(percentile(list, 0.5)),
              first_response_p90: ms3(percentile(list, 0.9)),
            };
          }),
        ),
        'speed.daily',
      );

      // ai
      const outbound = msgs.filter((m) => m.sender !== 'contact');
      const aiConversations = [...new Set(outbound.filter((m) => m.sender === 'ai_agent').map((m) => m.conversation))];
      const handoffEvents = evs.filter((e) => e.type === 'manual_control_activated' || e.type === 'transfer_accepted');
      const aiOnly = aiConversations.filter(
        (i) =>
          !outbound.some((m) => m.conversation === i && (m.sender === 'human' || m.sender === 'api')) &&
          !evs.some((e) => e.conversation === i && e.type === 'manual_control_activated'),
      ).length;
      const handedOff = aiConversations.filter((i) => handoffEvents.some((e) => e.conversation === i)).length;
      const ai = await report('ai');
      const n = aiConversations.length;
      expectRows(
        ai.summary.rows,
        [
          {
            conversations: n,
            handled_by_ai_only: aiOnly,
            ai_only_share: n ? aiOnly / n : null,
            handoffs: handoffEvents.length,
            handoff_rate: n ? handedOff / n : null,
            transfers_accepted: evs.filter((e) => e.type === 'transfer_accepted').length,
            transfers_rejected: evs.filter((e) => e.type === 'transfer_rejected').length,
            transfers_without_target: evs.filter((e) => e.type === 'transfer_fallback_required').length,
            follow_ups_sent: outbound.filter((m) => m.sender === 'ai_agent' && m.followUp).length,
          },
        ],
        'ai.summary',
      );
      const reasons = new Map<string | null, number>();
      for (const e of handoffEvents) reasons.set(e.reason, (reasons.get(e.reason) ?? 0) + 1);
      expectRows(
        ai.handoff_reasons.rows,
        [...reasons.entries()]
          .map(([reason, count]) => ({ reason, count }))
          .sort(
            (x, y) =>
              y.count - x.count || (x.reason === null ? 1 : y.reason === null ? -1 : x.reason < y.reason ? -1 : 1),
          ),
        'ai.handoff_reasons',
      );
      expectRows(
        ai.tokens.rows,
        days.map((date) => ({ date, tokens: tokenDays.get(date) ?? 0, budget: t.config.ai.dailyTokenBudget || null })),
        'ai.tokens',
      );

      // team
      // The instant after the period: local midnight after `until`.
      const periodEnd = Date.parse(`${until}T00:00:00Z`) + 86_400_000 + MIDNIGHTS[g.zone] - ORIGIN;
      const teamReport = await report('team');
      expectRows(
        teamReport.users.rows,
        users
          .map((id, u) => {
            const replies = msgs.filter((m) => m.sender === 'human' && m.user === u);
            const control = evs
              .filter((e) => e.type === 'manual_control_activated' && e.byUser === u)
              .map((e) => {
                const release = events
                  .filter(
                    (r) => r.conversation === e.conversation && r.type === 'manual_control_released' && r.at > e.at,
                  )
                  .map((r) => r.at);
                return (Math.min(release.length ? Math.min(...release) : Infinity, periodEnd) - e.at) / 1000;
              });
            return {
              user_id: id,
              name: u === 0 ? 'Ann' : 'Bob',
              conversations_handled: new Set(replies.map((m) => m.conversation)).size,
              replies_sent: replies.length,
              first_response_median: ms3(
                percentile(firsts(answered.filter((a) => a.sender === 'human' && a.user === u)), 0.5),
              ),
              manual_control_seconds: ms3(control.reduce((s, x) => s + x, 0)),
            };
          })
          .filter((_, u) => f.kind !== 'user' || f.user === u),
        'team.users',
      );

      // sentiment
      const sentiments = evs.filter((e) => e.type === 'sentiment_analyzed');
      const count = (list: typeof sentiments) => ({
        positive: list.filter((e) => e.sentiment === 'POSITIVE').length,
        neutral: list.filter((e) => e.sentiment === 'NEUTRAL').length,
        negative: list.filter((e) => e.sentiment === 'NEGATIVE').length,
      });
      const sentiment = await report('sentiment');
      expectRows(
        sentiment.daily.rows,
        days.map((date) => ({ date, ...count(sentiments.filter((e) => local(g.zone, e.at).day === date)) })),
        'sentiment.daily',
      );
      expectRows(
        sentiment.by_agent.rows,
        [true, false]
          .filter((withAgent) => sentiments.some((e) => e.agent === withAgent))
          .map((withAgent) => ({
            agent_id: withAgent ? agent : null,
            agent_name: withAgent ? 'Ava' : null,
            ...count(sentiments.filter((e) => e.agent === withAgent)),
          })),
        'sentiment.by_agent',
      );
    }),
    FUZZ,
  );
}, 120_000);
