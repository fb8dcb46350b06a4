/**
 * Inbound throughput per channel type, in one run (docs/PERFORMANCE.md#channels-inbound): for each
 * channel, --messages inbound texts (for voice, incoming calls) as its vendor delivers them (from
 * --senders senders): signed webhooks sent as fast as the service answers over --connections
 * connections (closed loop), or, for
 * email, mails put into the mailbox the channel reads (IMAP APPEND to a local Dovecot, as fast as it
 * stores them), or, for the website widget, texts written through its route by visitors whose
 * sessions the warm-up opened, or, for WhatsApp Web, `messages.upsert` events of Baileys' event
 * buffer on the linked socket the service holds (the service then runs in this process, on a
 * storage of its own, so that its socket factory is the bench's), after a warm-up of a tenth as
 * many. Measured from the first delivery to the moment
 * the business's webhook receiver holds the `message_created` of every one of them: stored, the
 * event handed to the outbox and delivered. Each channel's messages are counted by their text (a
 * call's by its call SID), so nothing is counted twice. HubSpot has two lines: `hubspot_mirrored`,
 * customers' SMS texts until the fake HubSpot holds the copy of each, and `hubspot_relayed`, signed
 * replies from HubSpot's inbox until the fake Twilio has sent each through its conversation's number.
 *
 *   npx tsx bench/channels-inbound.bench.ts [--engine postgres|pglite|both]
 *     [--only whatsapp,sms,messenger,instagram,tiktok,email,web_embed,voice,whatsapp_web,
 *       hubspot_mirrored,hubspot_relayed]
 *     [--messages 3000] [--senders 500] [--connections 32] [--port 4760]
 *
 * PG_URL (default postgres://postgres@127.0.0.1:5432); the database bench_channels is dropped and created anew.
 */
import type { FastifyInstance } from 'fastify';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startFakeGraphApi } from '../test/helpers/fake-graph-api.ts';
import { startFakeTwilioApi } from '../test/helpers/fake-twilio-api.ts';
import { startDovecot } from '../test/helpers/dovecot.ts';
import { startFakeMetaMessagingApi } from '../test/helpers/fake-meta-messaging-api.ts';
import { startFakeTikTokApi } from '../test/helpers/fake-tiktok-api.ts';
import { startSmtpSink } from '../test/helpers/smtp-sink.ts';
import { startFakeHubSpotApi } from '../test/helpers/fake-hubspot-api.ts';
import {
  BENCH_MAILBOX,
  BENCH_PUBLIC_URL,
  channelLoads,
  countTagged,
  type ChannelFakes,
  type ChannelLoad,
  type Delivery,
} from './lib/channel-loads.ts';
import { startInProcessService } from './lib/in-process-service.ts';
import { percentiles } from './lib/messaging-load.ts';
import { ADMIN_TOKEN, createTenant, freshStorage, startService, type Engine } from './lib/service.ts';
import { BenchReceiver } from './webhooks-receiver.ts';

const { values } = parseArgs({
  options: {
    engine: { type: 'string', default: 'both' },
    only: { type: 'string', default: channelLoads.map((l) => l.channel).join(',') },
    messages: { type: 'string', default: '3000' },
    senders: { type: 'string', default: '500' },
    connections: { type: 'string', default: '32' },
    port: { type: 'string', default: '4760' },
  },
});
const engines: Engine[] = values.engine === 'both' ? ['postgres', 'pglite'] : [values.engine as Engine];
const only = new Set(values.only.split(','));
const messages = Number(values.messages);
const senders = Number(values.senders);
const connections = Number(values.connections);

/** Makes every delivery, `connections` at a time, each as soon as the last one was answered. */
async function closedLoop(pool: Pool, deliveries: Delivery[]) {
  const latencies: number[] = [];
  let next = 0;
  let refused = 0;
  const worker = async () => {
    while (next < deliveries.length) {
      const deliver = deliveries[next++];
      const started = performance.now();
      if ((await deliver(pool)) >= 300) refused++;
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return { latencies, refused };
}

/** Resolves once `landed` counts `count` texts tagged `tag` (by default the receiver's message_created). */
async function arrived(landed: (tag: string) => number, tag: string, count: number, timeoutMs = 300_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const seen = landed(tag);
    if (seen >= count) return;
    if (Date.now() > end) throw new Error(`${tag}: ${seen} of ${count} landed`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs `loads` on one service over `storage`, one after another, adding a row of the table for each. */
async function runLoads(
  engine: Engine,
  loads: ChannelLoad[],
  service: { url: string; app?: FastifyInstance },
  fakes: ChannelFakes,
) {
  const tenant = await createTenant(service.url);
  const hook = await fetch(`${service.url}/admin/v1/businesses/${tenant.businessId}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ event: 'message_created', url: fakes.receiver.url }),
  });
  if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${await hook.text()}`);
  for (const load of loads) {
    const build = await load.setup(service.url, tenant.businessId, { ...fakes, app: service.app });
    const landed = (tag: string) =>
      load.landed
        ? load.landed(fakes, tag)
        : countTagged(
            fakes.receiver.receipts.map((r) => r.text),
            tag,
          );
    const pool = new Pool(service.url, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
    const warmCount = Math.max(1, Math.round(messages / 10));
    await closedLoop(pool, build(`${load.channel}-warm`, warmCount, senders));
    await arrived(landed, `${load.channel}-warm`, warmCount);
    const requests = build(`${load.channel}-run`, messages, senders);
    const started = performance.now();
    const { latencies, refused } = await closedLoop(pool, requests);
    const accepted = performance.now() - started;
    await arrived(landed, `${load.channel}-run`, messages);
    const all = performance.now() - started;
    await pool.close();
    const p = percentiles(latencies);
    rows.push(
      `| ${engine} | ${load.channel} | ${messages} | ${Math.round((messages * 1000) / all)} | ${Math.round((messages * 1000) / accepted)} | ${p.p50.toFixed(1)} / ${p.p99.toFixed(1)} | ${refused} |`,
    );
    console.log(rows.at(-1));
  }
}

const rows: string[] = [];
const selected = channelLoads.filter((l) => only.has(l.channel));
for (const engine of engines) {
  const graph = await startFakeGraphApi();
  const twilio = await startFakeTwilioApi();
  const meta = await startFakeMetaMessagingApi();
  const tiktok = await startFakeTikTokApi();
  const hubspot = await startFakeHubSpotApi();
  const dovecot = await startDovecot([BENCH_MAILBOX]);
  const smtp = await startSmtpSink();
  const receiver = await BenchReceiver.start();
  const fakes: ChannelFakes = { graph, twilio, meta, tiktok, hubspot, dovecot, smtp, receiver };
  try {
    const spawned = selected.filter((l) => !l.inProcess);
    if (spawned.length > 0) {
      const storage = await freshStorage(engine, 'bench_channels');
      // TRUST_PROXY: the widget's visitors each write from their own address (X-Forwarded-For).
      const service = await startService(storage, Number(values.port), {
        PUBLIC_URL: BENCH_PUBLIC_URL,
        TRUST_PROXY: 'true',
      });
      try {
        await runLoads(engine, spawned, service, fakes);
      } finally {
        await service.stop();
        await storage.dispose();
      }
    }
    const inProcess = selected.filter((l) => l.inProcess);
    if (inProcess.length > 0) {
      // A storage of its own: the spawned service's is gone, and a PGlite directory has one process.
      const storage = await freshStorage(engine, 'bench_channels');
      // The poller looks for the link to hold every half second, so the link is made in a moment.
      const service = await startInProcessService(storage, Number(values.port), {
        PUBLIC_URL: BENCH_PUBLIC_URL,
        POLLER_REFRESH_MS: '500',
        POLLER_INTERVAL_MS: '200',
      });
      try {
        await runLoads(engine, inProcess, service, fakes);
      } finally {
        await service.stop();
        await storage.dispose();
      }
    }
  } finally {
    await receiver.close();
    await graph.close();
    await twilio.close();
    await meta.close();
    await tiktok.close();
    await hubspot.close();
    await dovecot.close();
    await smtp.close();
  }
}

console.log(
  [
    '',
    `${messages} inbound notifications per channel (one text each, ${senders} senders), ${connections} connections, closed loop, after a warm-up of ${Math.round(messages / 10)}:`,
    '',
    '| engine | channel | messages | stored and delivered /s | accepted /s | accept p50 / p99 ms | refused |',
    '|---|---|---:|---:|---:|---|---:|',
    ...rows,
  ].join('\n'),
);
