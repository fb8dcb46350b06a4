import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzOptions, weighted } from '../../helpers/schema-arbitraries.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import {
  buildWebhookApp,
  callsOfRun,
  createWebhook,
  deliveriesInHand,
  newModelRun,
  Receiver,
  sharedDatabase,
  storeMessage,
  TestClock,
  waitUntil,
  type ModelRun,
  type Received,
  type SharedDatabase,
  type WebhookTestApp,
} from './webhook-harness.ts';

/**
 * Webhook retries against a model of the documented rules, with the service's clock moved by the
 * test. Generated sequences of messages in two businesses, endpoints that change how they answer
 * (2xx; 408, 429 with or without Retry-After, 5xx; 410; other 4xx and redirects), moves of the clock
 * by seconds to days, and webhooks disabled and enabled again. After every step the calls the
 * endpoints received are exactly the model's: each webhook's deliveries in message order, a later
 * one held while an earlier one waits for its retry; a failed attempt retried after 5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h and 10 h (never sooner than a Retry-After asks, up to a day), then given
 * up; 410 and other 4xx final; 410, and failing without a success for 5 days, disable the webhook,
 * whose deliveries then wait until it is enabled again. The operator API shows the same state.
 * fast-check is seeded, and shrinks a failing sequence.
 */

const FUZZ = fuzzOptions(30);

const SECOND = 1000;
const HOUR = 3600 * SECOND;
const DAY = 24 * HOUR;
/** The documented schedule: delays before each retry (the worker's jitter is set to none here). */
const RETRY_DELAYS_MS = [5 * SECOND, 5 * 60 * SECOND, 30 * 60 * SECOND, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

/** How an endpoint answers. */
type Answer = { status: number; retryAfterSeconds?: number };

interface Pending {
  messageId: string;
  /** The webhook-id, known from the first call on. */
  deliveryId?: string;
  attempts: number;
  nextAt: number;
}

interface Hook {
  business: number;
  id: string;
  path: string;
  enabled: boolean;
  reason: string | null;
  failingSince: number | null;
  /** One conversation per business: the webhook's deliveries form one line, oldest first. */
  queue: Pending[];
  attempts: number;
}

interface Model {
  hooks: Hook[];
}

type Real = ModelRun;

let shared: SharedDatabase;
let t: WebhookTestApp;
let receiver: Receiver;
const clock = new TestClock();
const answers = new Map<string, Answer>();
let runs = 0;

beforeAll(async () => {
  shared = await sharedDatabase();
  // random 0.5: no jitter, so the model knows each retry's time to the millisecond.
  t = await buildWebhookApp(shared, { clock, worker: { random: () => 0.5 } });
  receiver = await Receiver.start();
  receiver.respond = (call) => {
    const answer = answers.get(call.url) ?? { status: 200 };
    const headers: Record<string, string> =
      answer.retryAfterSeconds === undefined ? {} : { 'retry-after': String(answer.retryAfterSeconds) };
    return { status: answer.status, headers, body: '' };
  };
});
afterAll(async () => {
  await receiver.close();
  await t.close();
  await shared.drop();
});

const retryable = (status: number) => status === 408 || status === 429 || status >= 500;

/**
 * One attempt of the webhook's first delivery, as the rules say it ends: delivered; retried after
 * the schedule's next delay (or a longer Retry-After, up to a day); or given up. 410 disables the
 * webhook; so does a failure 5 days after the first failure since the last success.
 */
function attempt(h: Hook, now: number) {
  const head = h.queue[0];
  const answer = answers.get(h.path) ?? { status: 200 };
  head.attempts += 1;
  h.attempts += 1;
  if (answer.status >= 200 && answer.status < 300) {
    h.queue.shift();
    h.failingSince = null;
    return;
  }
  h.failingSince ??= now;
  if (answer.status === 410) {
    [h.enabled, h.reason] = [false, 'endpoint_gone'];
    h.queue.shift();
    return;
  }
  if (now - h.failingSince >= 5 * DAY) [h.enabled, h.reason] = [false, 'failing_5_days'];
  const delay = retryable(answer.status) ? RETRY_DELAYS_MS[head.attempts - 1] : undefined;
  if (delay === undefined) {
    h.queue.shift();
    return;
  }
  head.nextAt = now + Math.max(delay, Math.min((answer.retryAfterSeconds ?? 0) * SECOND, DAY));
}

/** The calls due now, in the order each webhook makes them, as the model runs them. */
function due(m: Model, now: number): Map<Hook, Pending[]> {
  const calls = new Map<Hook, Pending[]>();
  for (const h of m.hooks) {
    const made: Pending[] = [];
    while (h.enabled && h.queue.length > 0 && h.queue[0].nextAt <= now) {
      made.push(h.queue[0]);
      attempt(h, now);
    }
    if (made.length > 0) calls.set(h, made);
  }
  return calls;
}

/**
 * Lets the worker do what is due, and checks each webhook's calls against the model's: the same
 * number, each for the delivery at the head of its line, a retry with the webhook-id of its first call.
 */
async function settle(m: Model, r: Real, label: string) {
  const expected = due(m, clock.now());
  const count = [...expected.values()].reduce((n, list) => n + list.length, 0);
  const now = new Date(clock.now()).toISOString();
  await waitUntil(
    async () => callsOfRun(receiver, r).length >= count && !(await deliveriesInHand(t.database.db, r, now)),
    15_000,
    `${label}: ${count} calls due, got ${callsOfRun(receiver, r).length}`,
  );
  const calls = callsOfRun(receiver, r, true);
  const byPath = new Map<string, Received[]>();
  for (const c of calls) byPath.set(c.url, [...(byPath.get(c.url) ?? []), c]);
  expect([...byPath.keys()].sort(), `${label}: webhooks called`).toEqual(
    [...expected.keys()].map((h) => h.path).sort(),
  );
  for (const [h, made] of expected) {
    const got = byPath.get(h.path)!;
    expect(got.length, `${label}: calls to ${h.path}`).toBe(made.length);
    made.forEach((pending, i) => {
      const id = got[i].headers['webhook-id'] as string;
      expect(
        (JSON.parse(got[i].body) as { payload: { messageId: string } }).payload.messageId,
        `${label}: call ${i} to ${h.path}`,
      ).toBe(pending.messageId);
      if (pending.deliveryId) expect(id, `${label}: a retry keeps its webhook-id`).toBe(pending.deliveryId);
      pending.deliveryId = id;
    });
  }
}

const hookUrl = (r: Real, h: Hook) => `/admin/v1/businesses/${r.tenants[h.business].businessId}/webhooks/${h.id}`;
const pick = (m: Model, index: number) => m.hooks[index % m.hooks.length];

class Message implements fc.AsyncCommand<Model, Real> {
  constructor(readonly business: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const { message } = await storeMessage(t, r.tenants[this.business].businessId, {
      conversation: r.conversations[this.business],
    });
    for (const h of m.hooks)
      if (h.business === this.business && h.enabled)
        h.queue.push({ messageId: message.id, attempts: 0, nextAt: clock.now() });
    await settle(m, r, this.toString());
  }
  toString = () => `Message(business ${this.business})`;
}

/** The endpoint of a webhook answers differently from now on. */
class Answers implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly hook: number,
    readonly answer: Answer,
  ) {}
  check = () => true;
  async run(m: Model) {
    answers.set(pick(m, this.hook).path, this.answer);
  }
  toString = () => `Answers(#${this.hook}, ${JSON.stringify(this.answer)})`;
}

/** The clock moves on by `ms`, `times` over, the worker doing what is due after each step. */
class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly ms: number,
    readonly times: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    for (let i = 1; i <= this.times; i += 1) {
      clock.advance(this.ms);
      t.app.services.webhooks.worker.wake();
      await settle(m, r, `${this.toString()}, step ${i}`);
    }
  }
  toString = () => `Advance(${this.ms} ms × ${this.times})`;
}

/** The operator disables or enables a webhook: enabling clears its failure run, and sends what is due. */
class Toggle implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly hook: number,
    readonly enabled: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const h = pick(m, this.hook);
    const res = await t.app.inject({
      method: 'PATCH',
      url: hookUrl(r, h),
      headers: adminHeaders,
      payload: { enabled: this.enabled },
    });
    expect(res.statusCode, `${this.toString()}: ${res.body}`).toBe(200);
    if (this.enabled && !h.enabled) [h.enabled, h.reason, h.failingSince] = [true, null, null];
    if (!this.enabled && h.enabled) [h.enabled, h.reason] = [false, 'disabled_by_operator'];
    await settle(m, r, this.toString());
  }
  toString = () => `Toggle(#${this.hook}, ${this.enabled ? 'enable' : 'disable'})`;
}

/** The operator API and the deliveries agree with the model: state, failure run, log, what waits and until when. */
class Check implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    for (const h of m.hooks) {
      const label = `Check ${h.path}`;
      const { webhook } = (await t.app.inject({ method: 'GET', url: hookUrl(r, h), headers: adminHeaders })).json();
      expect(
        {
          enabled: webhook.enabled,
          reason: webhook.disabled_reason,
          failingSince: webhook.failing_since && Date.parse(webhook.failing_since),
        },
        label,
      ).toEqual({ enabled: h.enabled, reason: h.reason, failingSince: h.failingSince });
      const log = (
        await t.app.inject({ method: 'GET', url: `${hookUrl(r, h)}/deliveries?limit=200`, headers: adminHeaders })
      ).json().deliveries;
      expect(log, label).toHaveLength(h.attempts);
      const waiting = await t.database.db
        .selectFrom('webhook_deliveries')
        .select(['message_id', 'attempts', 'next_attempt_at'])
        .where('business_id', '=', r.tenants[h.business].businessId)
        .where('webhook_id', '=', h.id)
        .where('state', '=', 'pending')
        .orderBy('seq')
        .execute();
      expect(
        waiting.map((d) => ({ messageId: d.message_id, attempts: d.attempts })),
        label,
      ).toEqual(h.queue.map((p) => ({ messageId: p.messageId, attempts: p.attempts })));
      // The head waits until its retry; the held ones behind it wait for it.
      if (h.queue[0]) expect(Date.parse(waiting[0].next_attempt_at), label).toBe(h.queue[0].nextAt);
    }
  }
  toString = () => 'Check';
}

/** The run's webhooks go, with what they still hold, so that later runs' clock moves do not wake them. */
class Cleanup implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    for (const h of m.hooks)
      expect((await t.app.inject({ method: 'DELETE', url: hookUrl(r, h), headers: adminHeaders })).statusCode).toBe(
        200,
      );
  }
  toString = () => 'Cleanup';
}

const answer: fc.Arbitrary<Answer> = fc.oneof(
  { arbitrary: fc.constantFrom(200, 204).map((status) => ({ status })), weight: 2 },
  { arbitrary: fc.constantFrom(408, 500, 503).map((status) => ({ status })), weight: 3 },
  fc.record({
    status: fc.constantFrom(429, 503),
    retryAfterSeconds: fc.oneof(fc.integer({ min: 0, max: 4 * 3600 }), fc.constant(2 * 86_400)),
  }),
  fc.constantFrom(400, 302).map((status) => ({ status })),
  fc.constant({ status: 410 }),
);
const commands: fc.Arbitrary<fc.AsyncCommand<Model, Real>>[] = [
  ...weighted(
    3,
    fc.integer({ min: 0, max: 1 }).map((b) => new Message(b)),
  ),
  ...weighted(
    2,
    fc.tuple(fc.nat(), answer).map(([h, a]) => new Answers(h, a)),
  ),
  ...weighted(
    3,
    fc
      .oneof(
        fc.integer({ min: 1, max: 10 * SECOND }),
        fc.constantFrom(5 * SECOND - 1, 5 * SECOND, 5 * 60 * SECOND, 30 * 60 * SECOND, 2 * HOUR, 5 * HOUR, 10 * HOUR),
        fc.integer({ min: 1, max: 3 * DAY }),
      )
      .chain((ms) =>
        fc
          .oneof({ arbitrary: fc.constant(1), weight: 3 }, fc.integer({ min: 2, max: 10 }))
          .map((times) => new Advance(ms, times)),
      ),
  ),
  // Enabling more often than disabling: a webhook the rules disabled comes back.
  fc.tuple(fc.nat(), fc.constantFrom(true, true, false)).map(([h, e]) => new Toggle(h, e)),
  fc.constant(new Check()),
];

describe('generated webhook retries', () => {
  it('agree with the model: order, schedule, Retry-After, final answers, 410 and the 5-day rule', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: 'large' }), async (cmds) => {
        const setup = async () => {
          const real = await newModelRun(t, receiver, (runs += 1));
          const hooks: Hook[] = [];
          for (const business of [0, 1]) {
            for (const i of [0, 1]) {
              const path = `/r${real.run}/b${business}h${i}`;
              const { webhook } = await createWebhook(t.app, real.tenants[business].businessId, {
                url: `${receiver.url}${path}`,
              });
              hooks.push({
                business,
                id: webhook.id,
                path,
                enabled: true,
                reason: null,
                failingSince: null,
                queue: [],
                attempts: 0,
              });
            }
          }
          return { model: { hooks }, real };
        };
        await fc.asyncModelRun(setup, [...cmds, new Check(), new Cleanup()]);
      }),
      FUZZ,
    );
  }, 600_000);
});
