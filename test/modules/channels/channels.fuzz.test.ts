import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  inboundMessage,
  metaNotification,
  startFakeGraphApi,
  type FakeGraphApi,
} from '../../helpers/fake-graph-api.ts';
import { fuzzOptions, weighted } from '../../helpers/schema-arbitraries.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { postSigned, WEBHOOK } from '../inbound/whatsapp-helpers.ts';
import { createTemplate, newPhone, settled } from '../sending/sending.fixtures.ts';

/**
 * The life of WhatsApp channels against a model of it. Generated sequences of operator calls
 * (create, rotate secrets, delete, by the channel's business or the other one) interleave with what
 * the outside world does (Meta's notifications signed with a current, an old or another channel's
 * app secret; Meta's verification with current, old and unknown tokens; sends through the API).
 * Numbers and provider accounts come from small pools, so they collide and move between channels
 * and businesses. After every step the service agrees with the model: which channel a
 * notification reaches, which one a send leaves from with which token, 409 and 404 where the model
 * says so, and no answer carrying a secret. fast-check is seeded, and shrinks a failing sequence.
 */

const FUZZ = fuzzOptions(40);

/** A channel as the model knows it. */
interface ModelChannel {
  business: number;
  id: string;
  identifier: string;
  account: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
  live: boolean;
  /** The app secrets and verify tokens it had before its rotations (and its last ones, once deleted), oldest first. */
  formerAppSecrets: string[];
  formerVerifyTokens: string[];
}

interface Model {
  channels: ModelChannel[];
  /** Every app secret and verify token the run has used, current or replaced. */
  appSecrets: string[];
  verifyTokens: string[];
}

interface Real {
  run: number;
  tenants: Tenant[];
  /** A template without variables per business, for sends. */
  templates: string[];
}

interface Secrets {
  accessToken: string;
  appSecret: string;
  verifyToken: string;
}

let t: TestApp;
let fake: FakeGraphApi;
let runs = 0;
let unique = 0;

beforeAll(async () => {
  fake = await startFakeGraphApi();
  // The fake Graph API listens on loopback, a private target.
  t = await buildTestApp({ ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' });
});
afterAll(async () => {
  await t.close();
  await fake.close();
});

// Pools of each run: two numbers, two provider accounts, so that they collide and are reused.
const identifierOf = (run: number, i: number) => `1555${String(run).padStart(4, '0')}0${i}`;
const accountOf = (run: number, i: number) => `77${run}00${i}`;
const channelsUrl = (real: Real, business: number, id?: string) =>
  `/admin/v1/businesses/${real.tenants[business].businessId}/channels${id ? `/${id}` : ''}`;

/** Secrets unique in a sequence of commands (a counter), with the characters each may hold. */
const secrets: fc.Arbitrary<Secrets> = fc
  .record({
    accessToken: fc.stringMatching(/^[A-Za-z0-9._~+/-]{1,30}=?$/),
    appSecret: fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom('é', '😀', ' ', 'a b')),
    verifyToken: fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom('&x=1', '😀', ' ', '%20')),
  })
  .map(({ accessToken, appSecret, verifyToken }) => {
    unique += 1;
    return {
      accessToken: `EAAG${unique}${accessToken}`,
      appSecret: `${appSecret}#${unique}`,
      verifyToken: `${verifyToken}#${unique}`,
    };
  });

/**
 * The secrets of a command as this run uses them: a run's channels stay in the database after it,
 * and shrinking runs the same commands again, so each run's secrets are its own.
 */
const ofRun = (s: Secrets, r: Real): Secrets => ({
  accessToken: `R${r.run}.${s.accessToken}`,
  appSecret: `${s.appSecret}@${r.run}`,
  verifyToken: `${s.verifyToken}@${r.run}`,
});

/** No answer of the operator API may hold a channel's secret. */
function expectNoSecrets(body: string, m: Model, label: string) {
  for (const secret of [...m.channels.map((c) => c.accessToken), ...m.appSecrets, ...m.verifyTokens]) {
    expect(body.includes(JSON.stringify(secret).slice(1, -1)), `${label}: ${body}`).toBe(false);
  }
}

const pick = (m: Model, index: number) => m.channels[index % m.channels.length];
/** An item of the list counted from its end (fast-check favours small indices: the latest items). */
const latest = <T>(list: T[], index: number): T | undefined =>
  list[list.length - 1 - (index % Math.max(list.length, 1))];
const messagesOf = async (channelIds: string[]) =>
  channelIds.length === 0
    ? 0
    : Number(
        (
          await t.database.db
            .selectFrom('messages')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('channel_id', 'in', channelIds)
            .executeTakeFirstOrThrow()
        ).n,
      );

class Create implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly business: number,
    readonly identifier: number,
    readonly plus: boolean,
    readonly account: number,
    readonly secrets: Secrets,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const identifier = identifierOf(r.run, this.identifier);
    const account = accountOf(r.run, this.account);
    const secrets = ofRun(this.secrets, r);
    const res = await t.app.inject({
      method: 'POST',
      url: channelsUrl(r, this.business),
      headers: adminHeaders,
      payload: {
        type: 'whatsapp',
        identifier: this.plus ? `+${identifier}` : identifier,
        provider: {
          kind: 'whatsapp_cloud',
          phone_number_id: account,
          access_token: secrets.accessToken,
          app_secret: secrets.appSecret,
          verify_token: secrets.verifyToken,
          api_base_url: fake.baseUrl,
        },
      },
    });
    const label = this.toString();
    m.appSecrets.push(secrets.appSecret);
    m.verifyTokens.push(secrets.verifyToken);
    expectNoSecrets(res.body, m, label);
    // A number is one channel per business; a provider account is one channel in the whole service.
    const conflict = m.channels.some((c) => c.live && c.business === this.business && c.identifier === identifier)
      ? 'identifier'
      : m.channels.some((c) => c.live && c.account === account)
        ? 'provider account'
        : undefined;
    if (conflict) {
      expect(res.statusCode, `${label}: ${res.body}`).toBe(409);
      expect(res.json().error.details, label).toEqual([{ field: conflict }]);
      return;
    }
    expect(res.statusCode, `${label}: ${res.body}`).toBe(201);
    expect(res.json().channel, label).toMatchObject({
      type: 'whatsapp',
      identifier,
      provider: { kind: 'whatsapp_cloud', account, api_base_url: fake.baseUrl },
    });
    fake.acceptAccessToken(secrets.accessToken);
    m.channels.push({
      business: this.business,
      id: res.json().channel.id,
      identifier,
      account,
      ...secrets,
      live: true,
      formerAppSecrets: [],
      formerVerifyTokens: [],
    });
  }
  toString = () =>
    `Create(business ${this.business}, number ${this.identifier}${this.plus ? ' with +' : ''}, account ${this.account}, ${JSON.stringify(this.secrets)})`;
}

class Rotate implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly channel: number,
    readonly asBusiness: number,
    readonly fields: (keyof Secrets)[],
    readonly secrets: Secrets,
  ) {}
  check = (m: Readonly<Model>) => m.channels.length > 0;
  async run(m: Model, r: Real) {
    const target = pick(m, this.channel);
    const names = { accessToken: 'access_token', appSecret: 'app_secret', verifyToken: 'verify_token' } as const;
    const secrets = ofRun(this.secrets, r);
    const provider = Object.fromEntries(this.fields.map((f) => [names[f], secrets[f]]));
    const res = await t.app.inject({
      method: 'PATCH',
      url: channelsUrl(r, this.asBusiness, target.id),
      headers: adminHeaders,
      payload: { provider },
    });
    const label = this.toString();
    m.appSecrets.push(secrets.appSecret);
    m.verifyTokens.push(secrets.verifyToken);
    expectNoSecrets(res.body, m, label);
    if (!target.live || target.business !== this.asBusiness) {
      expect(res.statusCode, `${label}: ${res.body}`).toBe(404);
      return;
    }
    expect(res.statusCode, `${label}: ${res.body}`).toBe(200);
    if (this.fields.includes('appSecret')) target.formerAppSecrets.push(target.appSecret);
    if (this.fields.includes('verifyToken')) target.formerVerifyTokens.push(target.verifyToken);
    for (const f of this.fields) target[f] = secrets[f];
    fake.acceptAccessToken(target.accessToken);
  }
  toString = () =>
    `Rotate(channel ${this.channel} as business ${this.asBusiness}: ${this.fields.map((f) => `${f}=${JSON.stringify(this.secrets[f])}`).join(', ')})`;
}

class Delete implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly channel: number,
    readonly asBusiness: number,
  ) {}
  check = (m: Readonly<Model>) => m.channels.length > 0;
  async run(m: Model, r: Real) {
    const target = pick(m, this.channel);
    const res = await t.app.inject({
      method: 'DELETE',
      url: channelsUrl(r, this.asBusiness, target.id),
      headers: adminHeaders,
    });
    const expected = target.live && target.business === this.asBusiness ? 200 : 404;
    expect(res.statusCode, `${this.toString()}: ${res.body}`).toBe(expected);
    if (expected !== 200) return;
    target.live = false;
    target.formerAppSecrets.push(target.appSecret);
    target.formerVerifyTokens.push(target.verifyToken);
  }
  toString = () => `Delete(channel ${this.channel} as business ${this.asBusiness})`;
}

/** Meta posts a message for an account, signed with its current app secret, an older one, or another channel's. */
class Notify implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly account: number,
    readonly signer: 'current' | 'replaced' | 'other',
    readonly index: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const account = accountOf(r.run, this.account);
    const live = m.channels.find((c) => c.live && c.account === account);
    // Replaced: one this account's channels had, the latest first; else any the run used.
    const former = m.channels.filter((c) => c.account === account).flatMap((c) => c.formerAppSecrets);
    const secret =
      this.signer === 'current'
        ? live?.appSecret
        : this.signer === 'replaced'
          ? latest(former.length ? former : m.appSecrets, this.index)
          : latest(
              m.channels.filter((c) => c.live && c !== live).map((c) => c.appSecret),
              this.index,
            );
    const before = await messagesOf(m.channels.map((c) => c.id));
    const from = newPhone();
    const notification = metaNotification({
      phoneNumberId: account,
      contacts: [{ waId: from, name: 'Ada' }],
      messages: [inboundMessage(from, 'text', { body: 'hi' })],
    });
    const res = await postSigned(t.app, notification, secret ?? 'no-such-secret');
    const label = `${this.toString()} signed with ${JSON.stringify(secret)}: ${res.statusCode} ${res.body}`;
    if (live && secret === live.appSecret) {
      expect(res.statusCode, label).toBe(200);
      expect(await messagesOf([live.id]), label).toBeGreaterThan(0);
      expect(await messagesOf(m.channels.map((c) => c.id)), label).toBe(before + 1);
      const stored = await t.database.db
        .selectFrom('messages')
        .select('business_id')
        .where('channel_id', '=', live.id)
        .where('sender_address', '=', from)
        .execute();
      expect(stored, label).toEqual([{ business_id: r.tenants[live.business].businessId }]);
    } else {
      expect(res.statusCode, label).toBe(401);
      expect(await messagesOf(m.channels.map((c) => c.id)), label).toBe(before);
    }
  }
  toString = () => `Notify(account ${this.account}, ${this.signer} secret #${this.index})`;
}

/** Meta's subscription check with a current, a replaced or an unknown verify token. */
class Verify implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly token: 'current' | 'replaced' | 'unknown',
    readonly index: number,
  ) {}
  check = () => true;
  async run(m: Model) {
    const current = m.channels.filter((c) => c.live).map((c) => c.verifyToken);
    const former = m.channels.flatMap((c) => c.formerVerifyTokens);
    const token =
      (this.token === 'current'
        ? latest(current, this.index)
        : this.token === 'replaced'
          ? latest(former.length ? former : m.verifyTokens, this.index)
          : undefined) ?? `unknown#${this.index}`;
    const res = await t.app.inject({
      method: 'GET',
      url: WEBHOOK,
      query: { 'hub.mode': 'subscribe', 'hub.verify_token': token, 'hub.challenge': '1158201444' },
    });
    const label = `${this.toString()} with ${JSON.stringify(token)}: ${res.statusCode} ${res.body}`;
    if (current.includes(token)) {
      expect(res.statusCode, label).toBe(200);
      expect(res.body, label).toBe('1158201444');
    } else {
      expect(res.statusCode, label).toBe(403);
    }
  }
  toString = () => `Verify(${this.token} token #${this.index})`;
}

/** A business sends from a number: through its own live channel of that number, with that channel's token. */
class Send implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly identifier: number,
    readonly asBusiness: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const identifier = identifierOf(r.run, this.identifier);
    const via = m.channels.find((c) => c.live && c.business === this.asBusiness && c.identifier === identifier);
    const phone = newPhone();
    const res = await t.app.inject({
      method: 'POST',
      url: '/external/v2/send-template',
      query: { template_id: r.templates[this.asBusiness], from_phone_number: identifier },
      headers: r.tenants[this.asBusiness].headers,
      payload: { phone },
    });
    const label = `${this.toString()}: ${res.statusCode} ${res.body}`;
    if (!via) {
      expect(res.statusCode, label).toBe(403);
      return;
    }
    expect(res.statusCode, label).toBe(200);
    const row = await settled(t, res.json().message_id as string, 15_000);
    expect({ status: row.status, error: row.error, channel: row.channel_id }, label).toEqual({
      status: 'SENT',
      error: null,
      channel: via.id,
    });
    const sent = fake.sends().filter((s) => (s.body as { to?: string }).to === phone);
    expect(
      sent.map((s) => [s.path, s.headers.authorization]),
      label,
    ).toEqual([[`/v21.0/${via.account}/messages`, `Bearer ${via.accessToken}`]]);
  }
  toString = () => `Send(number ${this.identifier} as business ${this.asBusiness})`;
}

const business = fc.integer({ min: 0, max: 1 });
const poolIndex = fc.integer({ min: 0, max: 1 });
// Weighted so that secrets are rotated and used often between the rarer creations and deletions.
const commands: fc.Arbitrary<fc.AsyncCommand<Model, Real>>[] = [
  ...weighted(
    2,
    fc
      .tuple(business, poolIndex, fc.boolean(), poolIndex, secrets)
      .map(([b, i, plus, a, s]) => new Create(b, i, plus, a, s)),
  ),
  ...weighted(
    2,
    fc
      .tuple(
        fc.nat(),
        business,
        fc.subarray(['accessToken', 'appSecret', 'verifyToken'] as (keyof Secrets)[], { minLength: 1 }),
        secrets,
      )
      .map(([c, b, f, s]) => new Rotate(c, b, f, s)),
  ),
  fc.tuple(fc.nat(), business).map(([c, b]) => new Delete(c, b)),
  ...weighted(
    3,
    fc
      .tuple(poolIndex, fc.constantFrom<Notify['signer']>('current', 'replaced', 'other'), fc.nat())
      .map(([a, s, i]) => new Notify(a, s, i)),
  ),
  fc
    .tuple(fc.constantFrom<Verify['token']>('current', 'replaced', 'unknown'), fc.nat())
    .map(([k, i]) => new Verify(k, i)),
  ...weighted(
    2,
    fc.tuple(poolIndex, business).map(([i, b]) => new Send(i, b)),
  ),
];

describe('generated channel lives', () => {
  it('agree with the model: where notifications land, which channel and token a send uses, 404 and 409, no secret shown', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: 'large' }), async (cmds) => {
        const setup = async () => {
          const tenants = [await createTenant(t.app, 'Acme'), await createTenant(t.app, 'Other')];
          const templates = await Promise.all(
            tenants.map((tenant) => createTemplate(t.app, tenant, { name: 'hello', body: 'Hello' })),
          );
          return {
            model: { channels: [], appSecrets: [], verifyTokens: [] },
            real: { run: (runs += 1), tenants, templates },
          };
        };
        await fc.asyncModelRun(setup, cmds);
      }),
      FUZZ,
    );
  }, 600_000);
});
