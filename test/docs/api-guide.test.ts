import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startFakeGraphApi, type FakeGraphApi } from '../helpers/fake-graph-api.ts';
import { engine } from '../helpers/test-app.ts';
import { Receiver, waitUntil } from '../modules/webhooks/webhook-harness.ts';
import { assignedNames, guideBlocks, GuideShell, type BlockRun, type Call, type GuideBlock } from './guide-shell.ts';

// docs/API-GUIDE.md's walk-through, run as a reader runs it: every ```sh guide``` block in order, in
// one shell session, against the service its first block starts with `npm start` (the built
// dist/server.js on the embedded engine, DATA_DIR a scratch folder), a fake Graph API on loopback
// for the WhatsApp channel and a webhook receiver on loopback. Each block's answers are checked
// below; a guide that no longer works, or a block without its checks, fails here.

const checkout = join(import.meta.dirname, '../..');
const guide = readFileSync(join(checkout, 'docs/API-GUIDE.md'), 'utf8');
const { blocks, untagged } = guideBlocks(guide);

/** The access tokens the guide gives its channel, then rotates to: the fake Graph API takes both. */
const ACCESS_TOKENS = ['EAAGexample1', 'EAAGexample2'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const IMPORTED = {
  conversation: '0190f5a0-0000-7000-8000-000000000001',
  inbound: '0190f5a0-0000-7000-8000-000000000002',
  outbound: '0190f5a0-0000-7000-8000-000000000003',
  event: '0190f5a0-0000-7000-8000-000000000004',
};

interface World {
  graph: FakeGraphApi;
  receiver: Receiver;
  dir: string;
  /** The guide's variables after the block. */
  vars: Record<string, string>;
  /** GET on the service's public API with the guide's key. */
  api(path: string): Promise<any>;
}

/** What a block must give: the status of each curl in order, then checks of the answers and of the world. */
interface Check {
  statuses: number[] | ((calls: Call[]) => void);
  answers?(calls: Call[], world: World, run: BlockRun): void | Promise<void>;
  /** Waits for what the block set in motion (a send, a delivery) before the next block runs. */
  settle?(world: World): Promise<void>;
  timeoutMs?: number;
}

const sentTexts = (graph: FakeGraphApi) =>
  graph.sends().map((send) => send.body as { to: string; type: string; text?: { body: string } });

const checks: Record<string, Check> = {
  start: {
    // Polls /readyz until the service answers: refused connections (0) or 503 first, then 200.
    statuses: (calls) => {
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.at(-1)!.status).toBe(200);
      for (const call of calls.slice(0, -1)) expect([0, 503]).toContain(call.status);
    },
    timeoutMs: 120_000,
  },
  business: {
    statuses: [201, 201],
    answers(calls, { vars }) {
      expect(vars.BIZ).toMatch(UUID);
      expect(vars.KEY).toMatch(/^mk_live_/);
      expect(calls[1].json().api_key.name).toBe('backend');
    },
  },
  contacts: {
    statuses: [201, 200, 200, 200, 200, 200, 201, 200, 200],
    answers(calls, { vars }) {
      expect(vars.CONTACT).toMatch(UUID);
      // Found without the mobile 9, by email in another case, by an SMS channel's form of the
      // number, then by the duplicate's email after the merge.
      for (const i of [1, 2, 3, 8])
        expect(calls[i].json().results.map((c: { id: string }) => c.id)).toEqual([vars.CONTACT]);
      expect(calls[4].json().contact).toMatchObject({ id: vars.CONTACT, email: 'ana@example.com' });
      expect(calls[5].json().contact[0]).toMatchObject({ name: 'Ana María Pérez', tags: ['vip'] });
      expect(calls[7].json()).toEqual({ success: true, survivor_id: vars.CONTACT });
    },
  },
  import: {
    statuses: [200],
    answers(calls) {
      expect(calls[0].json()).toEqual({
        imported: { contacts: 0, conversations: 1, messages: 2, events: 1 },
        errors: [],
        error_count: 0,
      });
    },
  },
  conversations: {
    statuses: [200, 201, 200, 200, 200, 200],
    answers(calls, { vars }) {
      for (const i of [0, 3]) {
        expect(calls[i].json().contact.id).toBe(vars.CONTACT);
        expect(calls[i].json().conversation).toMatchObject({ id: IMPORTED.conversation, message_count: 2 });
      }
      expect(calls[4].json().messages.map((m: { uuid: string }) => m.uuid)).toEqual([
        IMPORTED.outbound,
        IMPORTED.inbound,
      ]);
      expect(calls[5].json().contact[0].closedAt).not.toBeNull();
    },
  },
  channel: {
    statuses: [201, 200, 200],
    answers(calls, { vars, graph }) {
      expect(vars.CHANNEL).toMatch(UUID);
      expect(vars.GRAPH_API).toBe(graph.baseUrl);
      expect(calls[0].json().channel.provider).toMatchObject({ kind: 'whatsapp_cloud', api_base_url: graph.baseUrl });
      expect(calls[1].body).toBe('1158201444');
    },
  },
  inbound: {
    statuses: [200],
    async answers(_calls, { vars, api }) {
      // Stored (the signature was good), so Ana's service window is open.
      const { messages } = await api(`/contacts/${vars.CONTACT}/messages?limit=1`);
      expect(messages[0]).toMatchObject({ status: 'received', text: 'Hi! Any news on my order?' });
    },
  },
  send: {
    statuses: [200, 200],
    answers(calls, { vars }) {
      expect(vars.MESSAGE).toMatch(UUID);
      expect(calls[0].json().message).toEqual({ uuid: vars.MESSAGE, status: 'enqueued' });
      expect(calls[0].json().conversation.id).toBe(IMPORTED.conversation);
      expect(['enqueued', 'sent']).toContain(calls[1].json().message.status);
    },
    async settle({ graph, vars, api }) {
      await waitUntil(async () => (await api(`/messages/status/${vars.MESSAGE}`)).message.status !== 'enqueued');
      expect((await api(`/messages/status/${vars.MESSAGE}`)).message.status).toBe('sent');
      expect(sentTexts(graph)).toEqual([
        expect.objectContaining({
          to: '5491123456789',
          type: 'text',
          text: expect.objectContaining({ body: 'Your order shipped' }),
        }),
      ]);
      expect(graph.sends()[0].headers.authorization).toBe(`Bearer ${ACCESS_TOKENS[1]}`);
    },
  },
  receipt: {
    statuses: [200, 200, 200],
    answers(calls, { vars }) {
      expect(vars.WAMID).toMatch(/^wamid\./);
      expect(calls[2].json().message).toMatchObject({ uuid: vars.MESSAGE, status: 'delivered' });
    },
  },
  templates: {
    statuses: [201, 200],
    answers(calls, { vars }) {
      expect(vars.TEMPLATE).toMatch(UUID);
      expect(calls[1].json()).toMatchObject({
        success: true,
        recipient: '5491123456789',
        template_name: 'order_update',
      });
    },
    async settle({ graph }) {
      await waitUntil(() => graph.sends().length === 2);
      const template = graph.sends()[1].body as { type: string; template: { name: string; components: unknown[] } };
      expect(template.type).toBe('template');
      expect(JSON.stringify(template.template.components)).toContain('A-1001');
    },
  },
  webhook: {
    statuses: [201],
    answers(calls, { vars, receiver }) {
      expect(vars.WEBHOOK).toMatch(UUID);
      expect(vars.WEBHOOK_SECRET).toMatch(/^whsec_/);
      expect(calls[0].json().webhook.url).toBe(`${receiver.url}/hooks/messages`);
    },
  },
  'webhook-delivery': {
    statuses: [200],
    async settle({ receiver, vars }) {
      const [call] = await receiver.waitFor(1);
      expect(call.url).toBe('/hooks/messages');
      expect(call.headers.authorization).toBe('Bearer crm-token');
      const body = new Webhook(vars.WEBHOOK_SECRET).verify(call.body, call.headers as Record<string, string>);
      expect(body).toMatchObject({
        event: 'message_created',
        payload: expect.objectContaining({ text: 'Thanks!' }) as unknown,
      });
      // The attempt is in the log before the next block reads it.
      await waitUntil(async () => (await admin(vars, `/webhooks/${vars.WEBHOOK}/deliveries`)).deliveries.length > 0);
    },
  },
  'webhook-log': {
    statuses: [200, 202],
    answers(calls, { vars, receiver }) {
      expect(calls[0].json().deliveries[0]).toMatchObject({ id: vars.DELIVERY, ok: true, status_code: 200 });
      expect(vars.DELIVERY).toBe(receiver.calls[0].headers['webhook-id']);
      expect(calls[1].json().delivery).toMatchObject({ id: vars.DELIVERY, state: 'pending' });
    },
    async settle({ receiver, vars }) {
      const [first, again] = await receiver.waitFor(2);
      expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
      expect(again.body).toBe(first.body);
      // Its outcome is recorded before the next block sends it again.
      await waitUntil(async () => (await admin(vars, `/webhooks/${vars.WEBHOOK}/deliveries`)).deliveries.length > 1);
    },
  },
  'webhook-headers': {
    statuses: [200, 202],
    answers(calls) {
      expect(calls[0].json().webhook.headers).toEqual({ authorization: '••••oken', 'x-tenant': '••••corp' });
      expect(calls[0].body).not.toContain('crm-token');
    },
    async settle({ receiver }) {
      const calls = await receiver.waitFor(3);
      expect(calls[2].headers.authorization).toBe('Bearer crm-token');
      expect(calls[2].headers['x-tenant']).toBe('acme-corp');
    },
  },
  exports: {
    statuses: [200, 200, 200],
    answers(calls, { vars }) {
      expect(calls[0].json().messages.map((m: { id: string }) => m.id)).toEqual([IMPORTED.inbound, IMPORTED.outbound]);
      expect(calls[0].headers.toLowerCase()).toContain('ratelimit-policy: "exports";q=120;w=60');
      expect(calls[1].json().events).toEqual([
        expect.objectContaining({ id: IMPORTED.event, type: 'agent_assigned', contact_id: vars.CONTACT }),
      ]);
      expect(calls[1].headers.toLowerCase()).toContain('ratelimit-policy: "events";q=120;w=60');
      const timeline = calls[2].json().items as { kind: string; id: string }[];
      expect(timeline.map((item) => item.id)).toEqual(expect.arrayContaining([vars.MESSAGE, IMPORTED.event]));
    },
  },
  sync: {
    statuses: [],
    async answers(_calls, { dir }, run) {
      expect(run.stdout).toMatch(/messages: \d+ stored/);
      const lines = async (file: string) =>
        (await readFile(join(dir, 'warehouse', file), 'utf8'))
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { id: string });
      // The history, the inbound messages, the send and the template: six messages.
      const messages = await lines('messages.ndjson');
      expect(messages).toHaveLength(6);
      expect(messages.map((m) => m.id)).toEqual(expect.arrayContaining([IMPORTED.inbound, IMPORTED.outbound]));
      expect((await lines('events.ndjson')).map((e) => e.id)).toContain(IMPORTED.event);
      expect(run.stdout).toMatch(/\b6 warehouse\/messages\.ndjson/);
    },
    timeoutMs: 60_000,
  },
  'conversation-operations': {
    statuses: [200, 200, 200, 200],
    answers(calls) {
      expect(calls[1].json().conversation).toMatchObject({ manual_control: true, manual_control_locked: true });
      expect(calls[2].json().conversation.closed_at).not.toBeNull();
      expect(calls[3].json().conversation).toMatchObject({ id: IMPORTED.conversation, agent_id: null });
    },
  },
  agents: {
    statuses: [201, 200, 200],
    answers(calls, { vars }) {
      expect(calls[1].json().agent).toMatchObject({ id: vars.AGENT, name: 'Sofía' });
      expect(calls[2].json().agent).toEqual({
        id: vars.AGENT,
        name: 'Sofía',
        type: 'basic',
        prompt_config: { tone: 'friendly', language: 'pt' },
        tools: { human_handoff: { enabled: false, instructions: 'Hand over when asked for a person.' } },
      });
    },
  },
  collections: {
    statuses: [201, 200],
    answers(calls) {
      expect(calls[1].json()).toMatchObject({
        operation: 'created',
        embedding_regenerated: true,
        embedding_json: { title: 'Trail shoe', 'details.summary': 'Light, for rocky paths' },
      });
    },
  },
  delete: {
    statuses: [200],
    async answers(calls, { vars, api }) {
      expect(calls[0].json()).toEqual({ success: true, contact_id: vars.CONTACT });
      await expect(api(`/contacts/${vars.CONTACT}`)).rejects.toThrow(/404/);
    },
  },
};

/** GET on the guide's business in the operator API. */
async function admin(vars: Record<string, string>, path: string): Promise<any> {
  const res = await fetch(`${vars.BUSINESS}${path}`, { headers: { authorization: `Bearer ${vars.ADMIN_TOKEN}` } });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A failed block, told with what a reader would see: its code, its output and the answers it got. */
function report(block: GuideBlock, run: BlockRun, serviceLog: string): string {
  return [
    `docs/API-GUIDE.md:${block.line}, block "${block.name}" ended with exit code ${run.exitCode ?? 'none (timed out)'}`,
    block.code,
    ...run.calls.map((call) => `-> ${call.status} ${call.request}\n   ${call.body.slice(0, 500)}`),
    `stderr: ${run.stderr.slice(-2000)}`,
    `service log (end): ${serviceLog.slice(-2000)}`,
  ].join('\n');
}

describe.runIf(engine === 'pglite')('docs/API-GUIDE.md, run block by block', () => {
  let graph: FakeGraphApi;
  let receiver: Receiver;
  let dir: string;
  let shell: GuideShell;
  let failed: string | undefined;
  const serviceLog = () => readFile(join(dir, '.guide', 'calls-1', 'stdout'), 'utf8').catch(() => '');

  beforeAll(async () => {
    graph = await startFakeGraphApi({ accessToken: ACCESS_TOKENS[0] });
    graph.acceptAccessToken(ACCESS_TOKENS[1]);
    receiver = await Receiver.start();
    dir = await mkdtemp(join(tmpdir(), 'api-guide-'));
    // The suite's migrated, empty database (test/global-setup.ts) as the service's data directory: a
    // first start's initdb and migrations take 5-40 s on a busy 2-core machine, and test/server.test.ts
    // covers them; the service still checks its schema at start.
    await mkdir(join(dir, 'data', 'pglite'), { recursive: true });
    await promisify(execFile)('tar', ['-xf', inject('pgliteSnapshot'), '-C', join(dir, 'data', 'pglite')]);
    shell = new GuideShell(
      dir,
      {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? dir,
        LANG: 'C.UTF-8',
        // What the guide leaves to its reader's machine: the port, the Graph API, the webhook's endpoint.
        PORT: String(await freePort()),
        GRAPH_API: graph.baseUrl,
        HOOK_URL: `${receiver.url}/hooks/messages`,
        DATA_DIR: join(dir, 'data'),
        GUIDE_CHECKOUT: checkout,
        npm_config_update_notifier: 'false',
        npm_config_fund: 'false',
      },
      [...new Set(blocks.flatMap((block) => assignedNames(block.code)))],
    );
  });

  afterAll(async () => {
    // The first block left the service running in its process group: stop it as Ctrl-C would, then for good.
    const groups = shell?.background ?? [];
    const signal = (name: NodeJS.Signals) => {
      for (const group of groups) {
        try {
          process.kill(-group, name);
        } catch {
          // that group has ended
        }
      }
    };
    signal('SIGTERM');
    const service = /"pid":(\d+)/.exec(await serviceLog())?.[1];
    const alive = () => {
      try {
        process.kill(Number(service), 0);
        return true;
      } catch {
        return false;
      }
    };
    if (service) await waitUntil(() => !alive(), 15_000).catch(() => signal('SIGKILL'));
    await Promise.all([graph?.close(), receiver?.close()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('tags every shell block of the guide, and each one has its checks here', () => {
    expect(untagged, 'lines of shell blocks without the guide tag: they would not be run').toEqual([]);
    expect(blocks.map((block) => block.name)).toEqual(Object.keys(checks));
  });

  for (const block of blocks) {
    const check = checks[block.name] as Check | undefined;
    it(`${block.name} (line ${block.line})`, { timeout: (check?.timeoutMs ?? 30_000) + 15_000 }, async (context) => {
      if (failed) context.skip(`an earlier block failed: ${failed}`);
      failed = block.name;
      expect(check, `no checks for block ${block.name}`).toBeDefined();
      const run = await shell.run(block, check!.timeoutMs ?? 30_000);
      if (run.exitCode !== 0) expect.fail(report(block, run, await serviceLog()));
      const { vars } = run;
      const world: World = {
        graph,
        receiver,
        dir,
        vars,
        async api(path) {
          const res = await fetch(`${vars.API}${path}`, { headers: { 'x-api-key': vars.KEY } });
          if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
          return res.json();
        },
      };
      try {
        // What a block sets for the next ones must hold something: jq prints null for a field that is not there.
        for (const name of assignedNames(block.code))
          if (name in vars) expect(vars[name], `${name} after block ${block.name}`).toMatch(/^(?!null$)./);
        if (typeof check!.statuses === 'function') check!.statuses(run.calls);
        else
          expect(run.calls.map((call) => `${call.status} ${call.request}`)).toEqual(
            check!.statuses.map((status, i) => `${status} ${run.calls[i]?.request ?? '(no call)'}`),
          );
        await check!.answers?.(run.calls, world, run);
        await check!.settle?.(world);
      } catch (err) {
        (err as Error).message += `\n\n${report(block, run, await serviceLog())}`;
        throw err;
      }
      failed = undefined;
    });
  }
});
