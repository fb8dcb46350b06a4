import { v7 } from 'uuid';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import { phoneKey } from '../../../src/lib/phone.ts';
import { contactIdentitiesRepository } from '../../../src/modules/contacts/contact-identities.repository.ts';
import type { AddressIdentity } from '../../../src/modules/contacts/contact-identity.ts';
import { contactsRepository } from '../../../src/modules/contacts/contacts.repository.ts';
import { identitiesOf, identityDrift } from '../../helpers/contact-identities.ts';
import { inboundMessage } from '../../helpers/fake-graph-api.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import type { TestApp } from '../../helpers/test-app.ts';
import { postImport } from '../import/import-helpers.ts';
import { withWhatsAppChannel, type WhatsAppFixture } from '../inbound/whatsapp-helpers.ts';

// Each address names one contact per business (contact_identities), the one inbound traffic from it
// lands on: every writer of contacts leaves them as the contacts' columns and aliases say.

let t: TestApp;
let tenant: Tenant;
let other: Tenant;
let notify: WhatsAppFixture['notify'];

beforeAll(async () => {
  ({ t, tenant, notify } = await withWhatsAppChannel());
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());
afterEach(async () => {
  expect(await identityDrift(t.database.db)).toEqual([]);
});

const db = () => t.database.db;
const create = (payload: object, headers = tenant.headers) =>
  t.app.inject({ method: 'POST', url: '/external/v2/contacts', headers, payload });
const remove = (id: string) =>
  t.app.inject({ method: 'DELETE', url: `/external/v2/contacts/${id}`, headers: tenant.headers });
const phone = (digits: string): AddressIdentity => ({ kind: 'phone', value: phoneKey(digits) });
const email = (address: string): AddressIdentity => ({ kind: 'email', value: address.toLowerCase() });

/** The contact an address names now (what an inbound message from it lands on), or undefined. */
async function namedBy(identity: AddressIdentity, businessId = tenant.businessId) {
  const found = await contactIdentitiesRepository.find(db(), businessId, [identity]);
  return [...found.values()][0]?.id;
}

async function inbound(from: string, name = 'Ada') {
  const res = await notify({
    contacts: [{ waId: from, name }],
    messages: [inboundMessage(from, 'text', { body: 'hi' })],
  });
  expect(res.statusCode).toBe(200);
}

const contactsWithPhone = (digits: string) =>
  db()
    .selectFrom('contacts')
    .select(['id', 'first_name'])
    .where('business_id', '=', tenant.businessId)
    .where('phone_key', '=', phoneKey(digits))
    .execute();

const importContact = (fields: { phone_number?: string; email?: string; created_at: string }) => ({
  type: 'contact',
  id: v7(),
  ...fields,
});

describe('contact identities', () => {
  it('a contact created through the API is named by its phone key and lower-cased email; an update changes none', async () => {
    const res = await create({ phone_number: '+54 9 11 5555-0101', email: 'Ada@Example.COM', external_id: 'crm-1' });
    expect(res.statusCode).toBe(201);
    const id = res.json().contact.id as string;
    expect((await identitiesOf(db(), tenant.businessId)).filter((i) => i.contact_id === id)).toEqual([
      { kind: 'email', value: 'ada@example.com', contact_id: id },
      { kind: 'phone', value: phoneKey('5491155550101'), contact_id: id },
    ]);
    // Either form of the number names it (the key drops Argentina's mobile 9).
    expect(await namedBy(phone('541155550101'))).toBe(id);

    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/external/v2/contacts/${id}`,
      headers: tenant.headers,
      payload: { name: 'Ada Lovelace', tags: ['vip'] },
    });
    expect(patched.statusCode).toBe(200);
    expect(await namedBy(phone('5491155550101'))).toBe(id);
    expect(await namedBy(email('ADA@example.com'))).toBe(id);
  });

  it('an inbound message from a new address creates its contact with the identity; later ones, in either form of the number, land on it', async () => {
    await inbound('5491155550202', 'Grace Hopper');
    const [created] = await contactsWithPhone('5491155550202');
    expect(created.first_name).toBe('Grace');
    expect(await namedBy(phone('5491155550202'))).toBe(created.id);

    await inbound('541155550202');
    expect(await contactsWithPhone('5491155550202')).toEqual([created]);
    const messages = await db()
      .selectFrom('messages')
      .select('contact_id')
      .where('business_id', '=', tenant.businessId)
      .where('contact_id', '=', created.id)
      .execute();
    expect(messages).toHaveLength(2);
  });

  it("an import names each address's oldest holder, within a batch and across imports, and inbound traffic lands there", async () => {
    const [p, q] = ['5215555000301', '5215555000302'];
    const middle = importContact({ phone_number: p, email: 'twin@example.com', created_at: '2021-01-01T00:00:00Z' });
    expect((await postImport(t.app, tenant.businessId, [middle])).statusCode).toBe(200);
    expect(await namedBy(phone(p))).toBe(middle.id);

    // An older holder imported later takes the address over; a younger one does not.
    const oldest = importContact({ phone_number: p, email: 'TWIN@example.com', created_at: '2020-01-01T00:00:00Z' });
    const youngest = importContact({ phone_number: p, created_at: '2022-01-01T00:00:00Z' });
    // Twins in one batch: the older wins whatever their order in the file.
    const [q1, q2] = [
      importContact({ phone_number: q, created_at: '2019-06-01T00:00:00Z' }),
      importContact({ phone_number: q, created_at: '2019-01-01T00:00:00Z' }),
    ];
    expect((await postImport(t.app, tenant.businessId, [oldest, q1, q2])).statusCode).toBe(200);
    expect((await postImport(t.app, tenant.businessId, [youngest])).statusCode).toBe(200);
    expect(await namedBy(phone(p))).toBe(oldest.id);
    expect(await namedBy(email('twin@example.com'))).toBe(oldest.id);
    expect(await namedBy(phone(q))).toBe(q2.id);

    // Mexico's legacy 1: the same key.
    await inbound('525555000301');
    const landed = await db()
      .selectFrom('messages')
      .select('contact_id')
      .where('business_id', '=', tenant.businessId)
      .where('contact_id', 'in', [oldest.id, middle.id, youngest.id])
      .execute();
    expect(landed).toEqual([{ contact_id: oldest.id }]);
  });

  it('a deletion takes its identities; an address it shared with a twin names the twin', async () => {
    const r = '34600000401';
    const older = importContact({ phone_number: r, email: 'pair@example.com', created_at: '2020-01-01T00:00:00Z' });
    const younger = importContact({ phone_number: r, email: 'Pair@Example.com', created_at: '2021-01-01T00:00:00Z' });
    expect((await postImport(t.app, tenant.businessId, [younger, older])).statusCode).toBe(200);
    expect(await namedBy(phone(r))).toBe(older.id);

    expect((await remove(older.id)).statusCode).toBe(200);
    expect(await namedBy(phone(r))).toBe(younger.id);
    expect(await namedBy(email('pair@example.com'))).toBe(younger.id);

    expect((await remove(younger.id)).statusCode).toBe(200);
    expect(await namedBy(phone(r))).toBeUndefined();
    expect(await namedBy(email('pair@example.com'))).toBeUndefined();
  });

  it("a merge: the loser's addresses, and the survivor's replaced email, name the survivor; none names the loser", async () => {
    const survivor = (await create({ phone_number: '4917000000501', email: 'keep@example.com' })).json().contact;
    const loser = (await create({ phone_number: '4917000000502', email: 'Chosen@example.com' })).json().contact;
    const res = await t.app.inject({
      method: 'POST',
      url: '/external/v2/contacts/merge',
      headers: tenant.headers,
      payload: { survivor_id: survivor.id, loser_id: loser.id, field_choices: { email: 'loser' } },
    });
    expect(res.statusCode).toBe(200);
    for (const identity of [
      phone('4917000000501'),
      phone('4917000000502'),
      email('keep@example.com'),
      email('chosen@example.com'),
    ])
      expect(await namedBy(identity), identity.value).toBe(survivor.id);
    expect((await identitiesOf(db(), tenant.businessId)).filter((i) => i.contact_id === loser.id)).toEqual([]);

    // A message from the loser's number lands on the survivor and creates no contact.
    await inbound('4917000000502');
    expect(await contactsWithPhone('4917000000502')).toEqual([]);
  });

  it('an address of a kind without a column (a page-scoped id) is written with its contact, moves with a merge and goes with a deletion', async () => {
    const psid = (value: string): AddressIdentity => ({ kind: 'page_scoped_id', value });
    const [visitor] = await contactsRepository.insertMany(db(), [
      {
        business_id: tenant.businessId,
        id: newId(),
        first_name: 'Page',
        identity: psid('7310000000000601'),
        address: null,
        source: 'instagram',
      },
    ]);
    expect(visitor).toMatchObject({ first_name: 'Page', phone_number: null, phone_key: null, email: null });
    expect(await namedBy(psid('7310000000000601'))).toBe(visitor.id);
    expect(await namedBy(psid('7310000000000601'), other.businessId)).toBeUndefined();

    const survivor = (await create({ email: 'psid-survivor@example.com' })).json().contact;
    const merged = await t.app.inject({
      method: 'POST',
      url: '/external/v2/contacts/merge',
      headers: tenant.headers,
      payload: { survivor_id: survivor.id, loser_id: visitor.id },
    });
    expect(merged.statusCode).toBe(200);
    expect(await namedBy(psid('7310000000000601'))).toBe(survivor.id);

    expect((await remove(survivor.id)).statusCode).toBe(200);
    expect(await namedBy(psid('7310000000000601'))).toBeUndefined();
  });

  it('is unique per business, and kept apart by business', async () => {
    const digits = '14155550701';
    const mine = (await create({ phone_number: digits })).json().contact;
    const theirs = (await create({ phone_number: digits }, other.headers)).json().contact;
    expect(await namedBy(phone(digits))).toBe(mine.id);
    expect(await namedBy(phone(digits), other.businessId)).toBe(theirs.id);
    await expect(
      db()
        .insertInto('contact_identities')
        .values({
          business_id: tenant.businessId,
          kind: 'phone',
          value: phoneKey(digits),
          contact_id: theirs.id,
          contact_created_at: theirs.created_at,
        })
        .execute(),
    ).rejects.toThrow();
  });

  it("follows a contact's phone, email or created_at changed through the contacts' writer, as a merge changes them", async () => {
    const contact = (await create({ phone_number: '14155550801', email: 'before@example.com' })).json().contact;
    await contactsRepository.update(db(), tenant.businessId, contact.id, {
      phone_number: '14155550802',
      phone_key: phoneKey('14155550802'),
      email: 'After@example.com',
    });
    expect(await namedBy(phone('14155550801'))).toBeUndefined();
    expect(await namedBy(email('before@example.com'))).toBeUndefined();
    expect(await namedBy(phone('14155550802'))).toBe(contact.id);
    expect(await namedBy(email('after@example.com'))).toBe(contact.id);

    // An earlier created_at makes it the oldest holder of an address it shares.
    const twin = importContact({ phone_number: '14155550802', created_at: '2001-01-01T00:00:00Z' });
    expect((await postImport(t.app, tenant.businessId, [twin])).statusCode).toBe(200);
    expect(await namedBy(phone('14155550802'))).toBe(twin.id);
    await contactsRepository.update(db(), tenant.businessId, contact.id, { created_at: '2000-01-01T00:00:00Z' });
    expect(await namedBy(phone('14155550802'))).toBe(contact.id);
  });
});
