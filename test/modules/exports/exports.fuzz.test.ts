import fc from 'fast-check';
import { v7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../../src/modules/events/events.writer.ts';
import { fuzzOptions, weighted } from '../../helpers/schema-arbitraries.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { postImport } from '../import/import-helpers.ts';
import { aug, walk, type ExportRecord } from './export-helpers.ts';

/**
 * The exports against a model of what they must give. Generated sequences of imports (contacts,
 * some of them test contacts, conversations on any channel, messages and events at instants that
 * tie to the microsecond, and records sent again), merges and deletions of contacts, in two
 * businesses, interleave with walks of `GET /messages` and `GET /events` over any window of up to 31
 * days (bounds on the records' own instants), any channel and type filter and any page size, some
 * with messages arriving ahead of the walk's position. Each walk gives exactly the model's records
 * of its business (test contacts left out, merged records under the survivor, deleted ones gone),
 * oldest first by (created_at, id), each once, in pages no larger than asked, ending with a null
 * cursor. fast-check is seeded, and shrinks a failing sequence.
 */

const FUZZ = fuzzOptions(30);

interface MContact {
  id: string;
  business: number;
  isTest: boolean;
}
interface MConversation {
  id: string;
  business: number;
  contactId: string;
  channel: string;
}
interface MMessage {
  id: string;
  business: number;
  conversationId: string;
  createdAt: string;
}
interface MEvent {
  id: string;
  business: number;
  conversationId: string | null;
  contactId: string;
  type: string;
  createdAt: string;
}

interface Model {
  contacts: MContact[];
  conversations: MConversation[];
  messages: MMessage[];
  events: MEvent[];
}

interface Real {
  tenants: Tenant[];
}

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_EXPORTS_PER_MINUTE: '1000000', RATE_LIMIT_EVENTS_PER_MINUTE: '1000000' });
});
afterAll(() => t.close());

const CHANNELS = ['whatsapp', 'whatsapp_web', 'instagram', 'tiktok', 'email', 'sms', 'voice'] as const;
const DAY = 86_400;

/**
 * Instants of the records and of the windows' bounds: a few shared ones (ties, and bounds equal to
 * records' instants), around August 2026, within reach of one 31-day window.
 */
const INSTANTS = [
  '2026-07-31T23:59:59.999999Z',
  aug(0),
  aug(0, 1),
  aug(3600, 500),
  aug(3 * DAY, 999),
  aug(3 * DAY + 1),
  aug(15 * DAY),
  aug(15 * DAY, 1),
  aug(29 * DAY),
  aug(30 * DAY, 999),
  '2026-09-01T00:00:00.000000Z',
];
const instant = fc.oneof(
  { arbitrary: fc.constantFrom(...INSTANTS), weight: 3 },
  fc.tuple(fc.integer({ min: 0, max: 31 * DAY - 1 }), fc.integer({ min: 0, max: 999 })).map(([s, us]) => aug(s, us)),
);
/** Epoch microseconds of an instant written with six fraction digits, and back. */
const micros = (iso: string) => Date.parse(iso) * 1000 + Number(iso.slice(23, 26));
const isoOf = (us: number) =>
  new Date(Math.floor(us / 1000)).toISOString().replace('Z', `${String(us % 1000).padStart(3, '0')}Z`);
const MAX_WINDOW_US = 31 * DAY * 1_000_000;
/** The contract's window: until after since, at most 31 days apart; otherwise 400. */
const validWindow = (w: Walk) => w.since < w.until && micros(w.until) - micros(w.since) <= MAX_WINDOW_US;

const of = <T extends { business: number }>(list: T[], business: number) => list.filter((x) => x.business === business);
/** The API key headers of the business, or of the other one. */
const keyOf = (r: Real, business: number, asOther: boolean) => r.tenants[asOther ? 1 - business : business].headers;
const keyOrder = <T extends { createdAt: string; id: string }>(a: T, b: T) =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/** A batch to import, its references resolved against the contacts and conversations at run time. */
interface Plan {
  contacts: { isTest: boolean; createdAt: string }[];
  conversations: { contact: number; channel: string; createdAt: string }[];
  messages: { conversation: number; createdAt: string; outbound: boolean }[];
  events: { conversation: number; contact: number; type: string; createdAt: string }[];
  /** Send again a message already imported: it is skipped. */
  again: number | null;
}

class Import implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly business: number,
    readonly plan: Plan,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const records: object[] = [];
    const contacts = of(m.contacts, this.business);
    const newContacts = this.plan.contacts.map((c): MContact => ({
      id: v7(),
      business: this.business,
      isTest: c.isTest,
    }));
    this.plan.contacts.forEach((c, i) =>
      records.push({
        type: 'contact',
        id: newContacts[i].id,
        first_name: 'Ana',
        is_test: c.isTest,
        created_at: c.createdAt,
      }),
    );
    const allContacts = [...contacts, ...newContacts];
    const newConversations: MConversation[] = [];
    if (allContacts.length > 0) {
      for (const c of this.plan.conversations) {
        const conversation = {
          id: v7(),
          business: this.business,
          contactId: allContacts[c.contact % allContacts.length].id,
          channel: c.channel,
        };
        newConversations.push(conversation);
        records.push({
          type: 'conversation',
          id: conversation.id,
          contact_id: conversation.contactId,
          channel: c.channel,
          created_at: c.createdAt,
        });
      }
    }
    const allConversations = [...of(m.conversations, this.business), ...newConversations];
    const newMessages: MMessage[] = [];
    const newEvents: MEvent[] = [];
    if (allConversations.length > 0) {
      for (const msg of this.plan.messages) {
        const message = {
          id: v7(),
          business: this.business,
          conversationId: allConversations[msg.conversation % allConversations.length].id,
          createdAt: msg.createdAt,
        };
        newMessages.push(message);
        records.push({
          type: 'message',
          id: message.id,
          conversation_id: message.conversationId,
          direction: msg.outbound ? 'outbound' : 'inbound',
          sender_type: msg.outbound ? 'human' : 'contact',
          text: 'hi',
          status: msg.outbound ? 'SENT' : 'RECEIVED',
          created_at: msg.createdAt,
        });
      }
    }
    if (allContacts.length > 0) {
      for (const e of this.plan.events) {
        // A contact field change is the contact's alone; every other event is of a conversation, and
        // of that conversation's contact.
        const contactLevel = e.type === 'contact_field_changed';
        if (!contactLevel && allConversations.length === 0) continue;
        const conversation = contactLevel ? null : allConversations[e.conversation % allConversations.length];
        const contactId = conversation?.contactId ?? allContacts[e.contact % allContacts.length].id;
        const event = {
          id: v7(),
          business: this.business,
          conversationId: conversation?.id ?? null,
          contactId,
          type: e.type,
          createdAt: e.createdAt,
        };
        newEvents.push(event);
        records.push({
          type: 'event',
          id: event.id,
          conversation_id: event.conversationId,
          contact_id: contactId,
          event_type: e.type,
          actor_type: 'system',
          data: {},
          created_at: e.createdAt,
        });
      }
    }
    const former = of(m.messages, this.business);
    if (this.plan.again !== null && former.length > 0) {
      const message = former[this.plan.again % former.length];
      records.push({
        type: 'message',
        id: message.id,
        conversation_id: message.conversationId,
        direction: 'inbound',
        sender_type: 'contact',
        text: 'again',
        status: 'RECEIVED',
        created_at: aug(1),
      });
    }
    if (records.length === 0) return;
    const res = await postImport(t.app, r.tenants[this.business].businessId, records);
    const label = `${this.toString()}: ${res.statusCode} ${res.body}`;
    expect(res.statusCode, label).toBe(200);
    expect(res.json(), label).toMatchObject({
      imported: {
        contacts: newContacts.length,
        conversations: newConversations.length,
        messages: newMessages.length,
        events: newEvents.length,
      },
      errors: [],
    });
    m.contacts.push(...newContacts);
    m.conversations.push(...newConversations);
    m.messages.push(...newMessages);
    m.events.push(...newEvents);
  }
  toString = () => `Import(business ${this.business}, ${JSON.stringify(this.plan)})`;
}

/** Merges two contacts of a business with the same test-ness; or, with another business's key, nothing (404). */
class Merge implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly business: number,
    readonly survivor: number,
    readonly loser: number,
    readonly asOther: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const contacts = of(m.contacts, this.business);
    const survivor = contacts[this.survivor % Math.max(contacts.length, 1)];
    const peers = contacts.filter((c) => c !== survivor && c.isTest === survivor?.isTest);
    const loser = peers[this.loser % Math.max(peers.length, 1)];
    if (!survivor || !loser) return;
    const res = await t.app.inject({
      method: 'POST',
      url: '/external/v2/contacts/merge',
      headers: keyOf(r, this.business, this.asOther),
      payload: { survivor_id: survivor.id, loser_id: loser.id },
    });
    const label = `${this.toString()}: ${res.statusCode} ${res.body}`;
    if (this.asOther) {
      expect(res.statusCode, label).toBe(404);
      return;
    }
    expect(res.statusCode, label).toBe(200);
    for (const c of m.conversations) if (c.contactId === loser.id) c.contactId = survivor.id;
    for (const e of m.events) if (e.contactId === loser.id) e.contactId = survivor.id;
    m.contacts.splice(m.contacts.indexOf(loser), 1);
  }
  toString = () =>
    `Merge(business ${this.business}, #${this.survivor} <- #${this.loser}${this.asOther ? ", with the other business's key" : ''})`;
}

/** Deletes a contact with its conversations, messages and events; or, with another business's key, nothing (404). */
class Delete implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly business: number,
    readonly contact: number,
    readonly asOther: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const contacts = of(m.contacts, this.business);
    const contact = contacts[this.contact % Math.max(contacts.length, 1)];
    if (!contact) return;
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/external/v2/contacts/${contact.id}`,
      headers: keyOf(r, this.business, this.asOther),
    });
    const label = `${this.toString()}: ${res.statusCode} ${res.body}`;
    if (this.asOther) {
      expect(res.statusCode, label).toBe(404);
      return;
    }
    expect(res.statusCode, label).toBe(200);
    const gone = new Set(m.conversations.filter((c) => c.contactId === contact.id).map((c) => c.id));
    m.conversations = m.conversations.filter((c) => !gone.has(c.id));
    m.messages = m.messages.filter((msg) => !gone.has(msg.conversationId));
    m.events = m.events.filter((e) => e.contactId !== contact.id);
    m.contacts.splice(m.contacts.indexOf(contact), 1);
  }
  toString = () =>
    `Delete(business ${this.business}, #${this.contact}${this.asOther ? ", with the other business's key" : ''})`;
}

/** A window's query: bounds, filters and page size. */
interface Walk {
  since: string;
  until: string;
  channels: string[] | null;
  types: string[] | null;
  limit: number;
}

const query = (w: Walk, path: 'messages' | 'events') => {
  const q = new URLSearchParams({ since: w.since, until: w.until, limit: String(w.limit) });
  if (w.channels) q.set('channel', w.channels.join(','));
  if (w.types && path === 'events') q.set('types', w.types.join(','));
  return q;
};

/** Walks an export (export-helpers' walk); for a window the contract refuses, expects its 400 instead. */
async function walkWindow(
  tenant: Tenant,
  path: 'messages' | 'events',
  w: Walk,
  label: string,
  onPage?: (page: number, records: ExportRecord[]) => Promise<void>,
) {
  const q = query(w, path).toString();
  if (validWindow(w)) return (await walk(t, tenant, path, q, onPage)).records;
  const res = await t.app.inject({ method: 'GET', url: `/external/v2/${path}?${q}`, headers: tenant.headers });
  expect({ status: res.statusCode, code: res.json().error?.code }, `${label}: ${res.body}`).toEqual({
    status: 400,
    code: 'validation_error',
  });
  return undefined;
}

const liveContact = (m: Model, id: string) => m.contacts.find((c) => c.id === id);

class WalkMessages implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly business: number,
    readonly window: Walk,
    /** Import a message ahead of the walk's position after this page. */
    readonly arrivingAfter: number | null,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const w = this.window;
    const label = this.toString();
    const conversations = new Map(m.conversations.map((c) => [c.id, c]));
    const arrived: MMessage[] = [];
    const records = await walkWindow(r.tenants[this.business], 'messages', w, label, async (page, walked) => {
      if (page !== this.arrivingAfter) return;
      const last = walked.at(-1);
      // At the window's last microsecond: after the walk's position, whatever it is.
      const createdAt = isoOf(micros(w.until) - 1);
      const conversation = of(m.conversations, this.business).find(
        (c) => !liveContact(m, c.contactId)?.isTest && (!w.channels || w.channels.includes(c.channel)),
      );
      if (!conversation || !last || createdAt <= last.created_at) return;
      const message = { id: v7(), business: this.business, conversationId: conversation.id, createdAt };
      const res = await postImport(t.app, r.tenants[this.business].businessId, [
        {
          type: 'message',
          id: message.id,
          conversation_id: conversation.id,
          direction: 'inbound',
          sender_type: 'contact',
          text: 'late',
          status: 'RECEIVED',
          created_at: createdAt,
        },
      ]);
      expect(res.json().imported.messages, `${label}: ${res.body}`).toBe(1);
      m.messages.push(message);
      arrived.push(message);
    });
    if (!records) return;
    const expected = of(m.messages, this.business)
      .filter((msg) => {
        const conversation = conversations.get(msg.conversationId)!;
        return (
          !liveContact(m, conversation.contactId)!.isTest &&
          msg.createdAt >= w.since &&
          msg.createdAt < w.until &&
          (!w.channels || w.channels.includes(conversation.channel))
        );
      })
      .sort(keyOrder)
      .map((msg) => {
        const conversation = conversations.get(msg.conversationId)!;
        return {
          id: msg.id,
          conversation_id: msg.conversationId,
          contact_id: conversation.contactId,
          channel: conversation.channel,
          created_at: msg.createdAt,
        };
      });
    const got = records.map((x) => ({
      id: x.id,
      conversation_id: x.conversation_id,
      contact_id: x.contact_id,
      channel: x.channel,
      created_at: x.created_at,
    }));
    expect(got, `${label}${arrived.length ? `, ${arrived[0].id} arriving` : ''}`).toEqual(expected);
  }
  toString = () =>
    `WalkMessages(business ${this.business}, ${JSON.stringify(this.window)}${this.arrivingAfter ? `, a message arriving after page ${this.arrivingAfter}` : ''})`;
}

class WalkEvents implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly business: number,
    readonly window: Walk,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const w = this.window;
    const channelOf = new Map(m.conversations.map((c) => [c.id, c.channel]));
    const records = await walkWindow(r.tenants[this.business], 'events', w, this.toString());
    if (!records) return;
    const expected = of(m.events, this.business)
      .map((e) => ({ ...e, channel: e.conversationId === null ? null : channelOf.get(e.conversationId)! }))
      .filter(
        (e) =>
          !liveContact(m, e.contactId)!.isTest &&
          e.createdAt >= w.since &&
          e.createdAt < w.until &&
          (!w.types || w.types.includes(e.type)) &&
          (!w.channels || (e.channel !== null && w.channels.includes(e.channel))),
      )
      .sort(keyOrder)
      .map((e) => ({
        id: e.id,
        type: e.type,
        conversation_id: e.conversationId,
        contact_id: e.contactId,
        channel: e.channel,
        created_at: e.createdAt,
      }));
    const got = records.map((x) => ({
      id: x.id,
      type: x.type,
      conversation_id: x.conversation_id,
      contact_id: x.contact_id,
      channel: x.channel,
      created_at: x.created_at,
    }));
    expect(got, this.toString()).toEqual(expected);
  }
  toString = () => `WalkEvents(business ${this.business}, ${JSON.stringify(this.window)})`;
}

const business = fc.integer({ min: 0, max: 1 });
const channel = fc.constantFrom(...CHANNELS);
const plan: fc.Arbitrary<Plan> = fc.record({
  contacts: fc.array(
    fc.record({
      isTest: fc.oneof({ arbitrary: fc.constant(false), weight: 7 }, fc.constant(true)),
      createdAt: instant,
    }),
    { maxLength: 3 },
  ),
  conversations: fc.array(fc.record({ contact: fc.nat(), channel, createdAt: instant }), { maxLength: 3 }),
  messages: fc.array(fc.record({ conversation: fc.nat(), createdAt: instant, outbound: fc.boolean() }), {
    maxLength: 12,
  }),
  events: fc.array(
    fc.record({ conversation: fc.nat(), contact: fc.nat(), type: fc.constantFrom(...EVENT_TYPES), createdAt: instant }),
    { maxLength: 8 },
  ),
  again: fc.option(fc.nat(), { nil: null, freq: 3 }),
});
/** Two instants of the pool at most 31 days apart, in order: a window's bounds. */
const bounds = fc.oneof(
  { arbitrary: fc.tuple(instant, instant).map(([a, b]) => (a <= b ? [a, b] : [b, a])), weight: 4 },
  // Exactly 31 days, holding every instant of the pool but the last.
  {
    arbitrary: fc.constant(['2026-07-31T23:59:59.999999Z', '2026-08-31T23:59:59.999999Z'] as [string, string]),
    weight: 3,
  },
  // Empty, reversed, or a microsecond over 31 days: refused.
  instant.map((a) => [a, a] as [string, string]),
  fc.tuple(instant, instant).filter(([a, b]) => a > b),
  instant.map((a) => [a, isoOf(micros(a) + MAX_WINDOW_US + 1)] as [string, string]),
);
const window: fc.Arbitrary<Walk> = fc
  .record({
    bounds,
    channels: fc.option(fc.uniqueArray(channel, { minLength: 1, maxLength: 3 }), { nil: null, freq: 2 }),
    types: fc.option(fc.uniqueArray(fc.constantFrom(...EVENT_TYPES), { minLength: 1, maxLength: 8 }), {
      nil: null,
      freq: 2,
    }),
    limit: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 5 }), weight: 3 }, fc.constantFrom(100, 500)),
  })
  .map(({ bounds: [since, until], ...rest }) => ({ since, until, ...rest }));

const commands: fc.Arbitrary<fc.AsyncCommand<Model, Real>>[] = [
  ...weighted(
    4,
    fc.tuple(business, plan).map(([b, p]) => new Import(b, p)),
  ),
  fc.tuple(business, fc.nat(), fc.nat(), fc.boolean()).map(([b, s, l, o]) => new Merge(b, s, l, o)),
  fc.tuple(business, fc.nat(), fc.boolean()).map(([b, c, o]) => new Delete(b, c, o)),
  ...weighted(
    2,
    fc
      .tuple(business, window, fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }))
      .map(([b, w, a]) => new WalkMessages(b, w, a)),
  ),
  ...weighted(
    2,
    fc.tuple(business, window).map(([b, w]) => new WalkEvents(b, w)),
  ),
];

describe('generated exports', () => {
  it('agree with the model: every record of the window once, oldest first, test contacts out, merges and deletions followed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 25, size: 'large' }), async (cmds) => {
        const setup = async () => ({
          model: { contacts: [], conversations: [], messages: [], events: [] },
          real: { tenants: [await createTenant(t.app, 'Acme'), await createTenant(t.app, 'Other')] },
        });
        // Each run ends with a walk of the whole window of each business, in small pages.
        const whole: Walk = {
          since: '2026-07-31T23:59:59.999999Z',
          until: '2026-08-31T23:59:59.999999Z',
          channels: null,
          types: null,
          limit: 3,
        };
        const last = [0, 1].flatMap((b) => [new WalkMessages(b, whole, 1), new WalkEvents(b, whole)]);
        await fc.asyncModelRun(setup, [...cmds, ...last]);
      }),
      FUZZ,
    );
  }, 600_000);
});
