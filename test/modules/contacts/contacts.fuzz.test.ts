import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundMessage, metaNotification } from '../../helpers/fake-graph-api.ts';
import { phoneKey } from '../../../src/lib/phone.ts';
import { identitiesOf } from '../../helpers/contact-identities.ts';
import { fuzzOptions, weighted } from '../../helpers/schema-arbitraries.ts';
import { adminHeaders, createTenant, type Tenant } from '../../helpers/tenants.ts';
import { buildTestApp, type TestApp } from '../../helpers/test-app.ts';
import { createWhatsAppChannel, postSigned } from '../inbound/whatsapp-helpers.ts';

/**
 * Contacts, merges and their aliases against a model. Generated sequences of creations, merges,
 * deletions and inbound WhatsApp messages, in two businesses, over small pools of emails (in any
 * case), phone numbers (spelled with and without the mobile 9 of Argentina and Chile and the legacy
 * 1 of Mexico) and external ids, so that identifiers collide, move to survivors as aliases and
 * vanish with deleted contacts. After each step, lookups by any identifier (GET /contacts and
 * GET /conversations) find exactly the contacts and conversations the model says, in their
 * business only, and each email, phone and alias names its contact (contact_identities); creations
 * conflict exactly where an identifier is taken; merges refuse what the contract refuses. fast-check
 * is seeded, and shrinks a failing sequence.
 */

const FUZZ = fuzzOptions(50);
const APP_SECRET = 'contacts-model-app-secret';

/** Each phone class: the spellings of one number that the service must take as the same. */
const PHONES: Record<string, string[]> = {
  ar: ['5491123456789', '541123456789', '+54 9 11 2345-6789'],
  cl: ['56912345678', '5612345678'],
  mx: ['5215512345678', '525512345678'],
  es: ['34612345678', '+34 612 34 56 78'],
};
/** Each email by its lower-case form, with the spellings the service must take as the same. */
const EMAILS: Record<string, string[]> = {
  'ada@example.com': ['ada@example.com', 'ADA@Example.com'],
  'bob@example.com': ['bob@example.com', 'Bob@EXAMPLE.COM'],
  'cy@example.com': ['cy@example.com'],
};
const EXTERNAL_IDS = ['ext-1', 'ext-2', 'EXT-1'];

/** A spelling of a class, e.g. ['ar', 1]. */
type Spelling = [string, number];
const spell = (pool: Record<string, string[]>, [cls, i]: Spelling) => pool[cls][i % pool[cls].length];
/** Meta writes a sender in digits: a spelling of the class without spaces or a plus. */
const senderOf = ([cls, i]: Spelling) => {
  const digits = PHONES[cls].filter((p) => /^\d+$/.test(p));
  return digits[i % digits.length];
};
const spelling = (pool: Record<string, string[]>) =>
  fc.tuple(fc.constantFrom(...Object.keys(pool)), fc.nat(2)) as fc.Arbitrary<Spelling>;

interface ModelContact {
  business: number;
  id: string;
  /** The email as stored (its case kept) and its phone's class. */
  email: string | null;
  phone: string | null;
  externalId: string | null;
  aliasEmails: string[];
  aliasPhones: string[];
  isTest: boolean;
  conversations: number;
  live: boolean;
}

interface Model {
  contacts: ModelContact[];
}

interface Real {
  tenants: Tenant[];
  /** Each business's WhatsApp channel: its provider account. */
  accounts: string[];
}

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

const emailClass = (email: string) => email.toLowerCase();
const live = (m: Model, business: number) => m.contacts.filter((c) => c.live && c.business === business);
const byEmail = (m: Model, business: number, email: string) =>
  live(m, business).find(
    (c) => c.email?.toLowerCase() === emailClass(email) || c.aliasEmails.includes(emailClass(email)),
  );
const byPhone = (m: Model, business: number, cls: string) =>
  live(m, business).find((c) => c.phone === cls || c.aliasPhones.includes(cls));
const byExternalId = (m: Model, business: number, id: string) => live(m, business).find((c) => c.externalId === id);
const pick = (m: Model, index: number) => m.contacts[index % m.contacts.length];

class Create implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly business: number,
    readonly email: Spelling | null,
    readonly phone: Spelling | null,
    readonly externalId: string | null,
    readonly isTest: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const email = this.email && spell(EMAILS, this.email);
    const phone = this.phone && spell(PHONES, this.phone);
    const body = {
      ...(email ? { email } : {}),
      ...(phone ? { phone_number: phone } : {}),
      ...(this.externalId ? { external_id: this.externalId } : {}),
      is_test: this.isTest,
    };
    const res = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/businesses/${r.tenants[this.business].businessId}/contacts`,
      headers: adminHeaders,
      payload: body,
    });
    const label = `${this.toString()}: ${res.statusCode} ${res.body}`;
    if (!email && !phone && !this.externalId) {
      expect(res.statusCode, label).toBe(400);
      return;
    }
    const owners: [string, ModelContact | undefined][] = [
      ['email', email ? byEmail(m, this.business, email) : undefined],
      ['phone_number', this.phone ? byPhone(m, this.business, this.phone[0]) : undefined],
      ['external_id', this.externalId ? byExternalId(m, this.business, this.externalId) : undefined],
    ];
    const taken = owners.flatMap(([field, owner]) => (owner ? [{ field, contact_id: owner.id }] : []));
    if (taken.length > 0) {
      expect(res.statusCode, label).toBe(409);
      expect(res.json().error.details, label).toEqual(taken);
      return;
    }
    expect(res.statusCode, label).toBe(201);
    m.contacts.push({
      business: this.business,
      id: res.json().contact.id,
      email: email ?? null,
      phone: this.phone?.[0] ?? null,
      externalId: this.externalId,
      aliasEmails: [],
      aliasPhones: [],
      isTest: this.isTest,
      conversations: 0,
      live: true,
    });
  }
  toString = () =>
    `Create(business ${this.business}, ${JSON.stringify({ email: this.email && spell(EMAILS, this.email), phone: this.phone && spell(PHONES, this.phone), external_id: this.externalId, is_test: this.isTest })})`;
}

class Merge implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly asBusiness: number,
    readonly survivor: number,
    readonly loser: number,
    readonly emailChoice: 'survivor' | 'loser' | undefined,
    readonly anyContacts: boolean,
  ) {}
  check = (m: Readonly<Model>) => m.contacts.length > 0;
  async run(m: Model, r: Real) {
    // Mostly two contacts the business has now; else any two the run has seen (gone, or of the other business).
    const own = live(m, this.asBusiness);
    const [s, l] =
      this.anyContacts || own.length < 2
        ? [pick(m, this.survivor), pick(m, this.loser)]
        : [own[this.survivor % own.length], own[this.loser % own.length]];
    const res = await t.app.inject({
      method: 'POST',
      url: '/external/v2/contacts/merge',
      headers: r.tenants[this.asBusiness].headers,
      payload: {
        survivor_id: s.id,
        loser_id: l.id,
        ...(this.emailChoice ? { field_choices: { email: this.emailChoice } } : {}),
      },
    });
    const label = `${this.toString()}: ${res.statusCode} ${res.body}`;
    if (s === l) return void expect(res.statusCode, label).toBe(400);
    if (!own.includes(s) || !own.includes(l)) return void expect(res.statusCode, label).toBe(404);
    if (s.isTest !== l.isTest) return void expect(res.statusCode, label).toBe(400);
    expect(res.statusCode, label).toBe(200);
    expect(res.json(), label).toEqual({ success: true, survivor_id: s.id });

    // The contract: empty fields fill from the loser, field_choices decide a conflict, and every
    // email and phone the survivor does not keep stays reachable as an alias.
    const emails = [l.email, s.email].filter((e): e is string => e !== null);
    if (l.email !== null && l.email !== s.email && (s.email === null || this.emailChoice === 'loser'))
      s.email = l.email;
    const phones = [l.phone].filter((p): p is string => p !== null);
    s.phone ??= l.phone;
    s.externalId ??= l.externalId;
    s.aliasEmails = [...new Set([...s.aliasEmails, ...l.aliasEmails, ...emails.map(emailClass)])].filter(
      (e) => e !== s.email?.toLowerCase(),
    );
    s.aliasPhones = [...new Set([...s.aliasPhones, ...l.aliasPhones, ...phones])].filter((p) => p !== s.phone);
    s.conversations += l.conversations;
    l.live = false;
  }
  toString = () =>
    `Merge(as business ${this.asBusiness}: ${this.anyContacts ? 'contact' : 'own contact'} ${this.survivor} <- ${this.loser}${this.emailChoice ? `, email: ${this.emailChoice}` : ''})`;
}

class Delete implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly asBusiness: number,
    readonly contact: number,
  ) {}
  check = (m: Readonly<Model>) => m.contacts.length > 0;
  async run(m: Model, r: Real) {
    const c = pick(m, this.contact);
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/external/v2/contacts/${c.id}`,
      headers: r.tenants[this.asBusiness].headers,
    });
    const label = `${this.toString()}: ${res.statusCode} ${res.body}`;
    if (!c.live || c.business !== this.asBusiness) return void expect(res.statusCode, label).toBe(404);
    expect(res.statusCode, label).toBe(200);
    c.live = false;
  }
  toString = () => `Delete(as business ${this.asBusiness}: contact ${this.contact})`;
}

/** A customer writes to the business on WhatsApp: the message lands on the contact its number names, or a new one. */
class Inbound implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly business: number,
    readonly phone: Spelling,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const from = senderOf(this.phone);
    const notification = metaNotification({
      phoneNumberId: r.accounts[this.business],
      contacts: [{ waId: from, name: 'Ada' }],
      messages: [inboundMessage(from, 'text', { body: 'hi' })],
    });
    const res = await postSigned(t.app, notification, APP_SECRET);
    expect(res.statusCode, `${this.toString()}: ${res.body}`).toBe(200);
    const contact = byPhone(m, this.business, this.phone[0]);
    if (contact) {
      contact.conversations = Math.max(contact.conversations, 1);
      return;
    }
    const rows = await t.database.db
      .selectFrom('contacts')
      .select('id')
      .where('business_id', '=', r.tenants[this.business].businessId)
      .where('id', 'not in', m.contacts.map((c) => c.id).concat('00000000-0000-0000-0000-000000000000'))
      .execute();
    expect(rows, `${this.toString()}: one new contact`).toHaveLength(1);
    m.contacts.push({
      business: this.business,
      id: rows[0].id,
      email: null,
      phone: this.phone[0],
      externalId: null,
      aliasEmails: [],
      aliasPhones: [],
      isTest: false,
      conversations: 1,
      live: true,
    });
  }
  toString = () => `Inbound(business ${this.business} from ${senderOf(this.phone)})`;
}

/** GET /contacts by any of the identifiers: every live contact of the business they name, oldest first. */
class Lookup implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly asBusiness: number,
    readonly email: Spelling | null,
    readonly phone: Spelling | null,
    readonly externalId: string | null,
    /** Ask for identifiers the business's contacts have or had, rather than any of the pools. */
    readonly known: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const seen = this.known ? m.contacts.filter((c) => c.business === this.asBusiness) : [];
    const among = (spelt: Spelling | null, classes: (string | null)[]): Spelling | null => {
      const known = [...new Set(classes.filter((c): c is string => c !== null))];
      return spelt && known.length ? [known[spelt[1] % known.length], spelt[1]] : spelt;
    };
    const email = among(
      this.email,
      seen.flatMap((c) => [c.email && emailClass(c.email), ...c.aliasEmails]),
    );
    const phone = among(
      this.phone,
      seen.flatMap((c) => [c.phone, ...c.aliasPhones]),
    );
    const externalId =
      this.externalId && this.known
        ? (seen.map((c) => c.externalId).find((x) => x !== null) ?? this.externalId)
        : this.externalId;
    const query = {
      ...(email ? { email: spell(EMAILS, email) } : {}),
      ...(phone ? { phone: spell(PHONES, phone) } : {}),
      ...(externalId ? { external_id: externalId } : {}),
    };
    const res = await t.app.inject({
      method: 'GET',
      url: '/external/v2/contacts',
      query,
      headers: r.tenants[this.asBusiness].headers,
    });
    const label = `${this.toString()} ${JSON.stringify(query)}: ${res.statusCode} ${res.body}`;
    if (Object.keys(query).length === 0) return void expect(res.statusCode, label).toBe(400);
    expect(res.statusCode, label).toBe(200);
    const expected = new Set(
      [
        email && byEmail(m, this.asBusiness, spell(EMAILS, email)),
        phone && byPhone(m, this.asBusiness, phone[0]),
        externalId && byExternalId(m, this.asBusiness, externalId),
      ]
        .filter((c): c is ModelContact => !!c)
        .map((c) => c.id),
    );
    const results = res.json().results as { id: string; created_at: string }[];
    expect(new Set(results.map((c) => c.id)), label).toEqual(expected);
    expect(results.length, label).toBe(expected.size);
    expect(
      results.map((c) => c.created_at),
      label,
    ).toEqual(results.map((c) => c.created_at).sort());
  }
  toString = () =>
    `Lookup(as business ${this.asBusiness}${this.known ? ', known identifiers' : ''}: ${JSON.stringify({ email: this.email, phone: this.phone, external_id: this.externalId })})`;
}

/** GET /conversations by phone: the one conversation of the one contact, 404 without, 409 with several. */
class ConversationLookup implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly asBusiness: number,
    readonly phone: Spelling,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const res = await t.app.inject({
      method: 'GET',
      url: '/external/v2/conversations',
      query: { phone: spell(PHONES, this.phone) },
      headers: r.tenants[this.asBusiness].headers,
    });
    const label = `${this.toString()}: ${res.statusCode} ${res.body}`;
    const contact = byPhone(m, this.asBusiness, this.phone[0]);
    if (!contact || contact.conversations === 0) return void expect(res.statusCode, label).toBe(404);
    if (contact.conversations > 1) return void expect(res.statusCode, label).toBe(409);
    expect(res.statusCode, label).toBe(200);
    expect(res.json().contact.id, label).toBe(contact.id);
  }
  toString = () => `ConversationLookup(as business ${this.asBusiness}: ${spell(PHONES, this.phone)})`;
}

/** What each address names (contact_identities): each email, phone and alias of a live contact, that contact. */
class Identities implements fc.AsyncCommand<Model, Real> {
  constructor(readonly business: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const expected = live(m, this.business).flatMap((c) => [
      ...[c.email && emailClass(c.email), ...c.aliasEmails].flatMap((value) =>
        value ? [{ kind: 'email', value, contact_id: c.id }] : [],
      ),
      ...[c.phone, ...c.aliasPhones].flatMap((cls) =>
        cls ? [{ kind: 'phone', value: phoneKey(PHONES[cls][0]), contact_id: c.id }] : [],
      ),
    ]);
    const byAddress = (a: { kind: string; value: string }, b: { kind: string; value: string }) =>
      a.kind.localeCompare(b.kind) || a.value.localeCompare(b.value);
    expect(await identitiesOf(t.database.db, r.tenants[this.business].businessId), this.toString()).toEqual(
      expected.sort(byAddress),
    );
  }
  toString = () => `Identities(business ${this.business})`;
}

const business = fc.integer({ min: 0, max: 1 });
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null, freq: 2 });
const commands: fc.Arbitrary<fc.AsyncCommand<Model, Real>>[] = [
  ...weighted(
    3,
    fc
      .tuple(
        business,
        maybe(spelling(EMAILS)),
        maybe(spelling(PHONES)),
        maybe(fc.constantFrom(...EXTERNAL_IDS)),
        fc.integer({ min: 0, max: 5 }).map((n) => n === 5),
      )
      .map(([b, e, p, x, test]) => new Create(b, e, p, x, test)),
  ),
  ...weighted(
    3,
    fc
      .tuple(
        fc.nat(),
        fc.nat(),
        fc.constantFrom<Merge['emailChoice']>('survivor', 'loser', undefined),
        business,
        fc.integer({ min: 0, max: 4 }),
      )
      .map(([s, l, choice, b, any]) => new Merge(b, s, l, choice, any === 4)),
  ),
  fc.tuple(business, fc.nat()).map(([b, c]) => new Delete(b, c)),
  ...weighted(
    2,
    fc.tuple(business, spelling(PHONES)).map(([b, p]) => new Inbound(b, p)),
  ),
  ...weighted(
    3,
    fc
      .tuple(
        business,
        maybe(spelling(EMAILS)),
        maybe(spelling(PHONES)),
        maybe(fc.constantFrom(...EXTERNAL_IDS)),
        fc.boolean(),
      )
      .map(([b, e, p, x, known]) => new Lookup(b, e, p, x, known)),
  ),
  ...weighted(
    2,
    fc.tuple(business, spelling(PHONES)).map(([b, p]) => new ConversationLookup(b, p)),
  ),
  business.map((b) => new Identities(b)),
];

describe('generated contact histories', () => {
  it('agree with the model: lookups by every identifier and alias, conflicts, merges, deletions, in one business only', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 60, size: 'large' }), async (cmds) => {
        const setup = async () => {
          const tenants = [await createTenant(t.app, 'Acme'), await createTenant(t.app, 'Other')];
          const channels = await Promise.all(
            tenants.map((tenant) => createWhatsAppChannel(t.app, tenant.businessId, { appSecret: APP_SECRET })),
          );
          return { model: { contacts: [] }, real: { tenants, accounts: channels.map((c) => c.phoneNumberId) } };
        };
        await fc.asyncModelRun(setup, cmds);
      }),
      FUZZ,
    );
  }, 600_000);
});
