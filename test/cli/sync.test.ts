import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSyncArgs } from '../../src/cli/sync.ts';
import { ndjsonSink, postgresSink } from '../../src/sync/sinks.ts';
import { runSync } from '../../src/sync/sync.ts';
import { buildTestApp, type TestApp } from '../helpers/test-app.ts';
import { createTenant, type Tenant } from '../helpers/tenants.ts';
import { bulkMessages, contactWithConversation, insertEvent } from '../modules/exports/export-helpers.ts';

let t: TestApp;
let url: string;
const dirs: string[] = [];
const tmp = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sync-test-'));
  dirs.push(dir);
  return dir;
};

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_EXPORTS_PER_MINUTE: '100000', RATE_LIMIT_EVENTS_PER_MINUTE: '100000' });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const address = t.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  url = `http://127.0.0.1:${address.port}`;
});
afterAll(async () => {
  await t.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A business with `n` messages spread over June to September 2026 (more than one 31-day piece) and a few events. */
async function business(
  n: number,
): Promise<{ tenant: Tenant; conversation: { id: string; contact_id: string; channel: string } }> {
  const tenant = await createTenant(t.app, `Sync ${n}`);
  const { conversation, contact } = await contactWithConversation(t.database.db, tenant.businessId);
  const span = Date.UTC(2026, 8, 30) - Date.UTC(2026, 5, 1);
  await bulkMessages(
    t.database.db,
    tenant.businessId,
    conversation,
    Array.from({ length: n }, (_, i) => ({
      created_at: new Date(Date.UTC(2026, 5, 1) + Math.floor((span * i) / n)).toISOString(),
    })),
  );
  for (let i = 0; i < 5; i++)
    await insertEvent(t.database.db, tenant.businessId, {
      contact_id: contact.id,
      conversation_id: conversation.id,
      channel: 'whatsapp',
      created_at: `2026-0${6 + (i % 3)}-1${i}T00:00:00Z`,
    });
  return { tenant, conversation };
}

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { id: string; created_at: string });

describe('sync tool', () => {
  it('copies everything to NDJSON in 31-day pieces, then resumes with an overlap and skips held ids', async () => {
    const { tenant, conversation } = await business(1200);
    const out = tmp();
    const sink = ndjsonSink(out);
    const first = await runSync({
      url,
      key: tenant.key,
      since: '2026-05-20',
      until: '2026-10-01T00:00:00Z',
      sink,
      pageSize: 250,
    });
    expect(first.find((r) => r.kind === 'messages')).toMatchObject({
      stored: 1200,
      skipped: 0,
      from: '2026-05-20T00:00:00.000000Z',
    });
    expect(first.find((r) => r.kind === 'events')).toMatchObject({ stored: 5 });
    const messages = lines(join(out, 'messages.ndjson'));
    expect(new Set(messages.map((m) => m.id)).size).toBe(1200);
    const keys = messages.map((m) => `${m.created_at}|${m.id}`);
    expect(keys).toEqual([...keys].sort());
    const lastAt = messages[messages.length - 1].created_at;

    // A late-recorded message inside the overlap, one before it (too old to be seen), and new ones.
    const late = new Date(Date.parse(lastAt) - 60_000).toISOString();
    const tooOld = new Date(Date.parse(lastAt) - 3600_000).toISOString();
    const added = await bulkMessages(t.database.db, tenant.businessId, conversation, [
      { created_at: late },
      { created_at: tooOld },
      { created_at: '2026-09-30T12:00:00Z' },
    ]);
    const second = await runSync({
      url,
      key: tenant.key,
      since: '2026-05-20',
      until: '2026-10-01T00:00:00Z',
      sink,
      pageSize: 250,
    });
    const m2 = second.find((r) => r.kind === 'messages')!;
    expect(m2.from).toBe(new Date(Date.parse(lastAt) - 5 * 60_000).toISOString().replace('Z', '000Z'));
    expect(m2.stored).toBe(2);
    expect(m2.skipped).toBeGreaterThanOrEqual(1);
    const after = lines(join(out, 'messages.ndjson'));
    expect(after).toHaveLength(1202);
    expect(new Set(after.map((m) => m.id))).toEqual(new Set([...messages.map((m) => m.id), added[0].id, added[2].id]));

    // A wider overlap catches the one recorded too late for the default.
    const third = await runSync({
      url,
      key: tenant.key,
      since: '2026-05-20',
      until: '2026-10-01T00:00:00Z',
      sink,
      pageSize: 250,
      overlapMinutes: 24 * 60,
    });
    expect(third.find((r) => r.kind === 'messages')).toMatchObject({ stored: 1 });
    expect(lines(join(out, 'messages.ndjson')).map((m) => m.id)).toContain(added[1].id);
  });

  it('paces itself from the RateLimit headers and honours 429 with Retry-After', async () => {
    const limited = await buildTestApp({ RATE_LIMIT_EXPORTS_PER_MINUTE: '3', RATE_LIMIT_WINDOW_SECONDS: '1' });
    try {
      await limited.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (limited.app.server.address() as { port: number }).port;
      const tenant = await createTenant(limited.app);
      const { conversation } = await contactWithConversation(limited.database.db, tenant.businessId);
      await bulkMessages(
        limited.database.db,
        tenant.businessId,
        conversation,
        Array.from({ length: 40 }, (_, i) => ({ created_at: `2026-08-01T00:00:${String(i).padStart(2, '0')}Z` })),
      );
      const statuses: number[] = [];
      const waits: string[] = [];
      const counting: typeof fetch = async (input, init) => {
        const res = await fetch(input, init);
        statuses.push(res.status);
        return res;
      };
      const run = () =>
        runSync({
          url: `http://127.0.0.1:${port}/external/v2`,
          key: tenant.key,
          since: '2026-08-01',
          until: '2026-08-02',
          kinds: ['messages'],
          sink: ndjsonSink(tmp()),
          pageSize: 5,
          fetch: counting,
          onWait: (_k, _ms, why) => waits.push(why),
        });
      const [paced] = await run();
      expect(paced.stored).toBe(40);
      expect(statuses.filter((s) => s === 429)).toHaveLength(0);
      expect(waits).toContain('pace');

      // Someone else spends the budget first: the sync meets a 429, waits Retry-After and goes on.
      statuses.length = 0;
      await new Promise((r) => setTimeout(r, 1100));
      for (let i = 0; i < 3; i++)
        await limited.app.inject({
          method: 'GET',
          url: '/external/v2/messages?since=2026-08-01',
          headers: tenant.headers,
        });
      const [afterLimit] = await run();
      expect(afterLimit.stored).toBe(40);
      expect(statuses[0]).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it.runIf(process.env.TEST_DATABASE_URL)('copies into PostgreSQL tables and resumes there', async () => {
    const { tenant } = await business(300);
    const schema = `sync_${Math.random().toString(36).slice(2, 10)}`;
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    try {
      const target = `${process.env.TEST_DATABASE_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
      for (const expected of [300, 0]) {
        const sink = await postgresSink(target);
        const [m] = await runSync({
          url,
          key: tenant.key,
          since: '2026-05-20',
          until: '2026-10-01T00:00:00Z',
          kinds: ['messages'],
          sink,
        });
        await sink.close();
        expect(m.stored).toBe(expected);
      }
      const { rows } = await admin.query(
        `SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM ${schema}.sync_messages`,
      );
      expect(rows[0]).toEqual({ n: 300, d: 300 });
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  });

  /** The sync tool run as a user runs it, over the test window. */
  const syncCommand = (key: string, out: string, ...extra: string[]) =>
    promisify(execFile)(
      'npx',
      [
        'tsx',
        'src/cli/sync.ts',
        '--url',
        url,
        '--key',
        key,
        '--since',
        '2026-05-20',
        '--until',
        '2026-10-01',
        '--out',
        out,
        ...extra,
      ],
      { cwd: process.cwd() },
    );

  it('runs as a command', async () => {
    const { tenant } = await business(30);
    const out = tmp();
    const { stdout } = await syncCommand(tenant.key, out, '--quiet');
    expect(stdout).toContain('messages: 30 stored');
    expect(lines(join(out, 'messages.ndjson'))).toHaveLength(30);
  });

  it('prints a progress line per kind, named, when the output is no terminal', async () => {
    const { tenant } = await business(12);
    const { stderr } = await syncCommand(tenant.key, tmp());
    expect(stderr).not.toContain('{');
    expect(stderr).toMatch(/^ messages +\|.*\| 100% \| 12 stored \|/m);
    expect(stderr).toMatch(/^ events +\|.*\| 100% \| 5 stored \|/m);
  });

  it('refuses incomplete or contradictory arguments', () => {
    const ok = ['--url', 'http://x', '--key', 'k', '--since', '2026-08-01'];
    expect(parseSyncArgs([...ok, '--out', 'd'])).toMatchObject({
      url: 'http://x',
      key: 'k',
      out: 'd',
      overlapMinutes: undefined,
    });
    expect(parseSyncArgs([...ok, '--out', 'd', '--overlap', '10080'])).toMatchObject({ overlapMinutes: 10080 });
    for (const args of [
      ok,
      [...ok, '--out', 'd', '--overlap', '-1'],
      [...ok, '--out', 'd', '--overlap', 'x'],
      [...ok, '--out', 'd', '--database', 'postgres://x'],
      [...ok, '--out', 'd', '--only', 'contacts'],
      [...ok, '--out', 'd', '--bogus'],
      ['--out', 'd'],
    ]) {
      expect(() => parseSyncArgs(args), args.join(' ')).toThrow();
    }
  });
});
