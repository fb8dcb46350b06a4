import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WEEKDAYS } from '../../../src/modules/agents/activation-rules.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import { createWhatsAppChannel } from '../inbound/whatsapp-helpers.ts';
import { aiApp, aiBusiness, runsOf, settle, type AiApp, type AiFixture } from './ai-helpers.ts';

// One app for the file; each test makes a business (channel, agent) of its own.
let base: AiApp;
beforeAll(async () => {
  base = await aiApp();
}, 60_000);
afterAll(() => base.close());

let f: AiFixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

/** Changes the agent's activation rules through the public API. */
async function setRules(fixture: AiFixture, rules: Record<string, unknown>) {
  const res = await fixture.app.app.inject({
    method: 'PATCH',
    url: `/external/v2/agents/${fixture.agentId}`,
    headers: fixture.tenant.headers,
    payload: { agent: { activation_rules: rules } },
  });
  expect(res.statusCode, res.body).toBe(200);
}

async function setTags(fixture: AiFixture, tags: string[]) {
  const conversation = await fixture.app.database.db
    .selectFrom('conversations')
    .select('contact_id')
    .where('id', '=', await fixture.conversationOf())
    .executeTakeFirstOrThrow();
  const res = await fixture.app.app.inject({
    method: 'PATCH',
    url: `/external/v2/contacts/${conversation.contact_id}`,
    headers: fixture.tenant.headers,
    payload: { tags },
  });
  expect(res.statusCode, res.body).toBe(200);
}

/**
 * Sends `text` and answers whether the agent replied to it: a reply comes within the debounce
 * (0.2 s), a poll of the worker and the model's answer; none is waited for 1.5 s, one up to 10 s.
 */
async function answered(fixture: AiFixture, text: string, expected: boolean): Promise<boolean> {
  const before = fixture.repliesTo().length;
  await fixture.inbound(text);
  const end = Date.now() + (expected ? 10_000 : 1500);
  while (fixture.repliesTo().length === before && Date.now() < end) await settle(20);
  return fixture.repliesTo().length > before;
}

/** The weekday and the hour now in `zone`, as the rules name them. */
function nowIn(zone: string) {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    weekday: 'short',
    hour: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date());
  const day = parts
    .find((p) => p.type === 'weekday')!
    .value.toLowerCase()
    .slice(0, 3) as (typeof WEEKDAYS)[number];
  return { day, hour: Number(parts.find((p) => p.type === 'hour')!.value) };
}

describe('activation rules', () => {
  it('channels: the agent answers on the channels listed only', async () => {
    f = await aiBusiness(base);
    const other = await createWhatsAppChannel(f.app.app, f.tenant.businessId);
    await setRules(f, { channels: [other.id] });
    expect(await answered(f, 'Hola', false)).toBe(false);
    await setRules(f, { channels: [f.channel.id, other.id] });
    expect(await answered(f, 'Hola otra vez', true)).toBe(true);
  });

  it('contact tags: any asks for one of them, none refuses each of them', async () => {
    f = await aiBusiness(base);
    await setRules(f, { contact_tags: { any: ['vip'] } });
    expect(await answered(f, 'Hola', false)).toBe(false);
    await setTags(f, ['vip']);
    expect(await answered(f, 'Soy vip', true)).toBe(true);
    await setRules(f, { contact_tags: { any: [], none: ['no_ai'] } });
    await setTags(f, ['vip', 'no_ai']);
    expect(await answered(f, '¿Y ahora?', false)).toBe(false);
    await setTags(f, ['vip']);
    expect(await answered(f, '¿Y ahora sí?', true)).toBe(true);
  });

  it('opening hours: the agent answers within the weekly windows of its time zone only', async () => {
    f = await aiBusiness(base);
    const zone = 'Pacific/Auckland';
    const { day, hour } = nowIn(zone);
    const otherDays = WEEKDAYS.filter((d) => d !== day);
    // Every day but today: closed now.
    await setRules(f, {
      opening_hours: { time_zone: zone, windows: [{ days: otherDays, from: '00:00', to: '24:00' }] },
    });
    expect(await answered(f, 'Hola', false)).toBe(false);
    // Today, from this hour to the next (the window past midnight when this is 23:00).
    const from = `${String(hour).padStart(2, '0')}:00`;
    const to = `${String((hour + 1) % 24).padStart(2, '0')}:00`;
    await setRules(f, { opening_hours: { windows: [{ days: [day], from, to }] } });
    expect(await answered(f, 'Hola de nuevo', true)).toBe(true);
    // Turned off: any hour.
    await setRules(f, {
      opening_hours: { enabled: false, windows: [{ days: otherDays, from: '00:00', to: '24:00' }] },
    });
    expect(await answered(f, 'Y a esta hora', true)).toBe(true);
    await setRules(f, { enabled: false });
    expect(await answered(f, '¿Sigues ahí?', false)).toBe(false);
    const runs = await runsOf(f, await f.conversationOf());
    expect(runs.filter((r) => r.status === 'replied')).toHaveLength(2);
  });

  it('refuses rules it cannot use with 400, on create and on a partial update, and keeps what was stored', async () => {
    f = await aiBusiness(base);
    const other = await aiBusiness(base);
    try {
      const bad: [string, unknown][] = [
        ['an unknown rule', { hours: { from: '09:00' } }],
        ['channels not a list', { channels: 'whatsapp' }],
        ['a channel that is not an id', { channels: ['whatsapp'] }],
        ["another business's channel", { channels: [other.channel.id] }],
        ['tags not a list', { contact_tags: { any: 'vip' } }],
        ['an unknown tag rule', { contact_tags: { all: ['vip'] } }],
        ['hours without a time zone', { opening_hours: { windows: [{ days: ['mon'], from: '09:00', to: '18:00' }] } }],
        [
          'an unknown time zone',
          { opening_hours: { time_zone: 'Mars/Olympus', windows: [{ days: ['mon'], from: '09:00', to: '18:00' }] } },
        ],
        ['hours without windows', { opening_hours: { time_zone: 'UTC' } }],
        [
          'an unknown day',
          { opening_hours: { time_zone: 'UTC', windows: [{ days: ['monday'], from: '09:00', to: '18:00' }] } },
        ],
        [
          'a time past 24:00',
          { opening_hours: { time_zone: 'UTC', windows: [{ days: ['mon'], from: '09:00', to: '24:30' }] } },
        ],
        [
          'an empty window',
          { opening_hours: { time_zone: 'UTC', windows: [{ days: ['mon'], from: '09:00', to: '09:00' }] } },
        ],
        ['a debounce over a minute', { debounce_seconds: 61 }],
        ['a debounce as text', { debounce_seconds: '3' }],
      ];
      for (const [what, rules] of bad) {
        const created = await f.app.app.inject({
          method: 'POST',
          url: `/admin/v1/businesses/${f.tenant.businessId}/agents`,
          headers: adminHeaders,
          payload: { name: 'x', activation_rules: rules },
        });
        expect(created.statusCode, what).toBe(400);
        expect(created.json().error.details?.[0]?.path ?? '', what).toMatch(/^\/activation_rules/);
        const patched = await f.app.app.inject({
          method: 'PATCH',
          url: `/external/v2/agents/${f.agentId}`,
          headers: f.tenant.headers,
          payload: { agent: { activation_rules: rules } },
        });
        expect(patched.statusCode, what).toBe(400);
        expect(patched.json().error.details?.[0]?.path ?? '', what).toMatch(/^\/agent\/activation_rules/);
      }
      const bad2 = await f.app.app.inject({
        method: 'PATCH',
        url: `/external/v2/agents/${f.agentId}`,
        headers: f.tenant.headers,
        payload: { agent: { prompt_config: { fallback_message: '' } } },
      });
      expect(bad2.statusCode).toBe(400);
      // A partial update completes what is stored: a time zone first, then its windows.
      await setRules(f, {
        opening_hours: { time_zone: 'Europe/Madrid', windows: [{ days: ['mon'], from: '22:00', to: '02:00' }] },
      });
      await setRules(f, { opening_hours: { time_zone: 'America/Santiago' } });
      const read = await f.app.app.inject({ url: `/external/v2/agents/${f.agentId}`, headers: f.tenant.headers });
      expect(read.json().agent.activation_rules).toEqual({
        debounce_seconds: 0.2,
        opening_hours: { time_zone: 'America/Santiago', windows: [{ days: ['mon'], from: '22:00', to: '02:00' }] },
      });
    } finally {
      await other.close();
    }
  });
});

describe("a channel's default agent", () => {
  it('gives every new conversation of the channel its agent, assigned by the system', async () => {
    f = await aiBusiness(base);
    await f.inbound('Hola');
    const conversationId = await f.conversationOf();
    const events = await f.app.app.inject({
      url: `/external/v2/events?since=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}&types=agent_assigned`,
      headers: f.tenant.headers,
    });
    expect(events.statusCode, events.body).toBe(200);
    expect(events.json().events).toEqual([
      expect.objectContaining({
        type: 'agent_assigned',
        conversation_id: conversationId,
        actor_type: 'system',
        agent: { id: f.agentId, name: 'Sofia' },
        data: { from_agent: null, to_agent: f.agentId },
      }),
    ]);
    const row = await f.app.database.db
      .selectFrom('conversations')
      .select('agent_id')
      .where('id', '=', conversationId)
      .executeTakeFirstOrThrow();
    expect(row.agent_id).toBe(f.agentId);
  });

  it('is set and cleared on the operator API, refusing an agent of another business or a bad id with 400', async () => {
    f = await aiBusiness(base);
    const other = await aiBusiness(base);
    try {
      const url = `/admin/v1/businesses/${f.tenant.businessId}/channels`;
      const patch = (payload: unknown) =>
        f!.app.app.inject({
          method: 'PATCH',
          url: `${url}/${f!.channel.id}`,
          headers: adminHeaders,
          payload: payload as object,
        });
      const read = await f.app.app.inject({ url: `${url}/${f.channel.id}`, headers: adminHeaders });
      expect(read.json().channel.agent_id).toBe(f.agentId);
      const foreign = await patch({ agent_id: other.agentId });
      expect(foreign.statusCode).toBe(400);
      expect(foreign.json().error.details).toEqual([expect.objectContaining({ path: '/agent_id' })]);
      expect((await patch({ agent_id: 'nope' })).statusCode).toBe(400);
      expect((await patch({ agent_id: 7 })).statusCode).toBe(400);
      expect((await patch({ agent_id: null })).json().channel.agent_id).toBeNull();

      // A new conversation of a channel without an agent has none, and no event.
      await f.inbound('Hola');
      const conversation = await f.app.database.db
        .selectFrom('conversations')
        .select('agent_id')
        .where('id', '=', await f.conversationOf())
        .executeTakeFirstOrThrow();
      expect(conversation.agent_id).toBeNull();

      const created = await f.app.app.inject({
        method: 'POST',
        url,
        headers: adminHeaders,
        payload: {
          type: 'whatsapp',
          identifier: '15550009999',
          agent_id: other.agentId,
          provider: {
            kind: 'whatsapp_cloud',
            phone_number_id: '990001',
            access_token: 'EAAx',
            app_secret: 's',
            verify_token: 'v',
          },
        },
      });
      expect(created.statusCode).toBe(400);
      expect(created.json().error.details).toEqual([expect.objectContaining({ path: '/agent_id' })]);
    } finally {
      await other.close();
    }
  });
});
