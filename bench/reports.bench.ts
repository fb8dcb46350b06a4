/**
 * Reports benchmark: every report of docs/REPORTS.md over a month and over a year of the largest of
 * ten businesses, unfiltered and filtered by team, on a database of N messages.
 *
 * The data: ten businesses, the first holding 60% of the messages and the others 4.4% each, in
 * conversations of 15 messages (the contact and a reply by turns, two minutes apart: the AI's in most
 * conversations, a person's or the API's in others) spread over the year before 2026-01-01; per
 * conversation a resolution (7 in 10), a sentiment (1 in 2), manual control taken and released (1 in
 * 10), a transfer (1 in 20). The messages are written as an import writes them (the quarter-hour
 * figures kept by their triggers). The data set is kept between runs (`--fresh` writes it anew).
 *
 * Each report is asked of ReportsService (the SQL and the tables' layout, without HTTP) `--runs`
 * times: median and slowest, in ms.
 *
 * With --floor, the speed report's percentiles alone over a year: the first responses and resolutions of
 * the year's conversations put in a table first, then the report's two groupings of them timed (the
 * least a year's exact percentiles cost, whatever reads the values).
 *
 *   npx tsx bench/reports.bench.ts [--engine postgres|pglite] [--messages 10000000] [--runs 5] [--fresh]
 *     [--periods month,year] [--floor]
 *     [--db bench_reports (PostgreSQL database, or PGlite directory under /tmp)]
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { newId } from '../src/lib/ids.ts';
import { ReportsService } from '../src/modules/reports/reports.service.ts';
import { REPORTS, type ReportName } from '../src/modules/reports/reports.schemas.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'postgres' },
    messages: { type: 'string', default: '10000000' },
    runs: { type: 'string', default: '5' },
    fresh: { type: 'boolean', default: false },
    db: { type: 'string', default: 'bench_reports' },
    periods: { type: 'string', default: 'month,year' },
    floor: { type: 'boolean', default: false },
  },
});
const engine = values.engine as 'postgres' | 'pglite';
const messages = Number(values.messages);
const runs = Number(values.runs);
const PER_CONVERSATION = 15;
const BUSINESSES = 10;
const log = (s: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${s}\n`);

async function open(): Promise<DatabaseHandle> {
  if (engine === 'pglite') {
    const dataDir = `/tmp/${values.db}-pglite-${messages}`;
    if (values.fresh && existsSync(dataDir)) throw new Error(`remove ${dataDir} for a fresh data set`);
    return openDatabase({ dataDir });
  }
  const server = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
  const admin = new pg.Client({ connectionString: `${server}/postgres` });
  await admin.connect();
  const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [values.db])).rowCount === 1;
  if (values.fresh || !exists) {
    await admin.query(`DROP DATABASE IF EXISTS "${values.db}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${values.db}"`);
  }
  await admin.end();
  return openDatabase({ databaseUrl: `${server}/${values.db}`, poolSize: 4 });
}

/** The largest business, with its data written unless the database holds it already. */
async function dataSet(database: DatabaseHandle): Promise<{ businessId: string; teamId: string }> {
  const db = database.db;
  await migrateToLatest(db);
  const existing = await sql<{ id: string; team: string; n: string }>`
    select b.id, (select id from teams t where t.business_id = b.id order by name limit 1) as team,
      (select count(*) from messages) as n
    from businesses b where b.name = 'Reports 0'`.execute(db);
  if (existing.rows[0] && Number(existing.rows[0].n) >= messages * 0.99) {
    log(`data set of ${existing.rows[0].n} messages kept from an earlier run`);
    return { businessId: existing.rows[0].id, teamId: existing.rows[0].team };
  }
  if (existing.rows[0]) throw new Error('the database holds another data set: run with --fresh');
  let largest: { businessId: string; teamId: string } | undefined;
  const started = Date.now();
  for (let i = 0; i < BUSINESSES; i++) {
    const share = i === 0 ? 0.6 : 0.4 / (BUSINESSES - 1);
    const business = await seedBusiness(db, i, Math.round((messages * share) / PER_CONVERSATION));
    largest ??= business;
    log(`business ${i} written (${Math.round((Date.now() - started) / 1000)} s)`);
  }
  // As autovacuum would have by the time anyone reads a year: hint bits set, statistics taken.
  await sql`vacuum analyze`.execute(db);
  return largest!;
}

async function seedBusiness(db: DatabaseHandle['db'], index: number, conversations: number) {
  const businessId = newId();
  const users = Array.from({ length: 10 }, () => newId());
  const teams = [newId(), newId()];
  const agents = [newId(), newId()];
  await sql`insert into businesses (id, name, time_zone) values (${businessId}, ${`Reports ${index}`}, 'America/Sao_Paulo')`.execute(
    db,
  );
  await sql`insert into users (business_id, id, email, name)
    select ${businessId}, u, u || '@example.com', 'Person ' || o from unnest(${users}::uuid[]) with ordinality as x(u, o)`.execute(
    db,
  );
  await sql`insert into teams (business_id, id, name)
    select ${businessId}, t, 'Team ' || o from unnest(${teams}::uuid[]) with ordinality as x(t, o)`.execute(db);
  await sql`insert into agents (business_id, id, name, created_at, updated_at)
    select ${businessId}, a, 'Agent ' || o, now(), now() from unnest(${agents}::uuid[]) with ordinality as x(a, o)`.execute(
    db,
  );
  // A slice at a time, so no statement holds millions of rows in its trigger's transition table.
  const slice = 20_000;
  for (let from = 0; from < conversations; from += slice) {
    const n = Math.min(slice, conversations - from);
    await db.transaction().execute(async (tx) => {
      await sql`create temporary table slice on commit drop as
        select gen_random_uuid() as id, gen_random_uuid() as contact_id, i,
          timestamptz '2025-01-01 00:00:00+00' + random() * interval '365 days' as at,
          case when i % 10 < 8 then 'whatsapp' when i % 10 = 8 then 'instagram' else 'email' end as channel,
          case i % 10 when 0 then 'human' when 1 then 'api' else 'ai_agent' end as replier
        from generate_series(${from}::int, ${from + n - 1}::int) i`.execute(tx);
      await sql`insert into contacts (business_id, id, first_name, created_at)
        select ${businessId}, contact_id, 'Contact ' || i, at from slice`.execute(tx);
      await sql`insert into conversations (business_id, id, contact_id, channel, created_at, team_id, assigned_user_id, agent_id)
        select ${businessId}, id, contact_id, channel, at, (${teams}::uuid[])[1 + i % 2],
          (${users}::uuid[])[1 + i % 10], (${agents}::uuid[])[1 + i % 2] from slice`.execute(tx);
      await sql`insert into messages (business_id, id, conversation_id, contact_id, channel, direction, sender_type,
          user_id, agent_id, text, status, excluded, created_at)
        select ${businessId}, gen_random_uuid(), s.id, s.contact_id, s.channel,
          case when k % 2 = 0 then 'inbound' else 'outbound' end,
          case when k % 2 = 0 then 'contact' else s.replier end,
          case when k % 2 = 1 and s.replier = 'human' then (${users}::uuid[])[1 + (s.i + k) % 10] end,
          case when k % 2 = 1 and s.replier = 'ai_agent' then (${agents}::uuid[])[1 + s.i % 2] end,
          'Message ' || k, case when k % 2 = 0 then 'RECEIVED' else 'READ' end, false,
          s.at + k * interval '2 minutes' + random() * interval '60 seconds'
        from slice s cross join generate_series(0, ${PER_CONVERSATION - 1}::int) k`.execute(tx);
      await sql`insert into events (business_id, id, conversation_id, contact_id, channel, type, actor_type, user_id,
          agent_id, data, created_at)
        select ${businessId}, gen_random_uuid(), s.id, s.contact_id, s.channel, e.type, e.actor,
          case when e.actor = 'human' then (${users}::uuid[])[1 + s.i % 10] end,
          case when e.actor = 'ai_agent' then (${agents}::uuid[])[1 + s.i % 2] end, e.data,
          s.at + e.after
        from slice s cross join lateral (values
          ('conversation_resolved', 'ai_agent', '{}'::jsonb, interval '40 minutes', s.i % 10 < 7),
          ('sentiment_analyzed', 'ai_agent', jsonb_build_object('sentiment', (array['POSITIVE', 'NEUTRAL', 'NEGATIVE'])[1 + s.i % 3]),
            interval '45 minutes', s.i % 2 = 0),
          ('manual_control_activated', 'human', '{"reason": "asked for a person"}'::jsonb, interval '5 minutes', s.i % 10 = 3),
          ('manual_control_released', 'human', '{}'::jsonb, interval '25 minutes', s.i % 10 = 3),
          ('transfer_accepted', 'ai_agent', '{"reason": "billing"}'::jsonb, interval '9 minutes', s.i % 20 = 7)
        ) e(type, actor, data, after, happens)
        where e.happens`.execute(tx);
    });
  }
  return { businessId, teamId: teams[0] };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const database = await open();
const { businessId, teamId } = await dataSet(database);
const service = new ReportsService(database.db, 0);
const periods = [
  { label: 'month', since: '2025-06-01', until: '2025-06-30' },
  { label: 'year', since: '2025-01-01', until: '2025-12-31' },
].filter((p) => values.periods.split(',').includes(p.label));
const loadBefore = loadavg()[0];
const rows: string[] = [];
for (const period of periods)
  for (const filter of [{}, { team_id: teamId }]) {
    const cells: string[] = [];
    for (const report of REPORTS as readonly ReportName[]) {
      const times: number[] = [];
      for (let run = 0; run < runs; run++) {
        const t0 = performance.now();
        await service.report(businessId, report, { since: period.since, until: period.until, ...filter });
        times.push(performance.now() - t0);
      }
      cells.push(`${Math.round(median(times))} / ${Math.round(Math.max(...times))}`);
    }
    rows.push(`| ${engine} | ${period.label} | ${'team_id' in filter ? 'one team' : 'none'} | ${cells.join(' | ')} |`);
    log(rows.at(-1)!);
  }
if (values.floor) {
  const floor = await database.db.transaction().execute(async (tx) => {
    await sql`select set_config('work_mem', '32MB', true)`.execute(tx);
    await sql`create temporary table year_firsts on commit drop as
      select d.day, case when d.reply_sender is null then null when d.reply_sender = 'ai_agent' then 'ai' else 'person' end
          as answered_first_by,
        extract(epoch from d.reply_at - d.asked_at)::float8 as first_response,
        extract(epoch from d.resolved_at - d.asked_at)::float8 as resolution
      from conversation_days d
      where d.business_id = ${businessId} and d.day between '2025-01-01' and '2025-12-31'
        and (d.previous_day is null or d.previous_day < '2025-01-01')`.execute(tx);
    const n = (await sql<{ n: number }>`select count(*)::int as n from year_firsts`.execute(tx)).rows[0].n;
    const times: number[] = [];
    for (let run = 0; run < runs; run++) {
      const t0 = performance.now();
      await sql`select answered_first_by, percentile_cont(array[0.5, 0.9]) within group (order by first_response),
          percentile_cont(array[0.5, 0.9]) within group (order by resolution)
        from year_firsts group by grouping sets ((answered_first_by), ())`.execute(tx);
      await sql`select day, answered_first_by, percentile_cont(array[0.5, 0.9]) within group (order by first_response)
        from year_firsts group by grouping sets ((day, answered_first_by), (day))`.execute(tx);
      times.push(performance.now() - t0);
    }
    return { n, times };
  });
  rows.push(
    `| ${engine} | year | the speed report's percentiles alone, over ${floor.n} conversations | ` +
      `${Math.round(median(floor.times))} / ${Math.round(Math.max(...floor.times))} |`,
  );
}
await database.close();
console.log(
  `\n${messages.toLocaleString('en')} messages, the largest business ${Math.round(messages * 0.6).toLocaleString('en')}; ` +
    `ms median / slowest of ${runs}; load average ${loadBefore.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after\n`,
);
console.log(`| engine | period | filter | ${REPORTS.join(' | ')} |`);
console.log(`|---|---|---|${REPORTS.map(() => '---:').join('|')}|`);
for (const row of rows) console.log(row);
