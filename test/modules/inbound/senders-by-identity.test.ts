import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/database.ts';
import { phoneKey } from '../../../src/lib/phone.ts';
import { identityKey } from '../../../src/modules/contacts/contact-identity.ts';
import { contactIdentitiesRepository } from '../../../src/modules/contacts/contact-identities.repository.ts';
import { inboundRepository } from '../../../src/modules/inbound/inbound.repository.ts';
import { insertContact } from '../../helpers/factories.ts';
import { createTenant, type Tenant } from '../../helpers/tenants.ts';
import { engine, type TestApp } from '../../helpers/test-app.ts';
import { withWhatsAppChannel, type TestChannel } from './whatsapp-helpers.ts';

// The inbound batch takes openConversation's locks in the sender lookup: the same lock names, for
// the contacts found only.

let t: TestApp;
let tenant: Tenant;
let other: Tenant;
let channel: TestChannel;

beforeAll(async () => {
  ({ t, tenant, channel } = await withWhatsAppChannel());
  other = await createTenant(t.app, 'Other');
});
afterAll(() => t.close());

/** Whether this transaction holds the advisory lock on `name` (pg_locks splits the 64-bit key in two). */
async function holds(trx: Db, name: string): Promise<boolean> {
  const { rows } = await sql<{ held: boolean }>`
    select exists (
      select 1 from pg_locks l, (select hashtextextended(${name}, 0) as h) k
      where l.locktype = 'advisory' and l.pid = pg_backend_pid() and l.granted
        and l.classid = ((k.h >> 32) & 4294967295)::oid and l.objid = (k.h & 4294967295)::oid) as held`.execute(trx);
  return rows[0].held;
}

async function advisoryLocks(trx: Db): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`select count(*)::int as n from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()`.execute(trx);
  return rows[0].n;
}

describe('inboundRepository.sendersByIdentity', () => {
  it("finds senders as contactIdentitiesRepository.find does and holds openConversation's lock for each one found", async () => {
    const known = await insertContact(t.database.db, tenant.businessId, {
      phone_number: '5491155550101',
      first_name: 'Known',
    });
    // The same phone in another business is not this business's sender.
    await insertContact(t.database.db, other.businessId, { phone_number: '5491155550202', first_name: 'Elsewhere' });
    const keyKnown = phoneKey('5491155550101');
    const keyElsewhere = phoneKey('5491155550202');
    const known1 = { kind: 'phone', value: keyKnown } as const;
    const elsewhere = { kind: 'phone', value: keyElsewhere } as const;

    await t.database.db.transaction().execute(async (trx) => {
      const found = await inboundRepository.sendersByIdentity(trx, tenant.businessId, [
        { identity: known1, channelId: channel.id },
        { identity: known1, channelId: channel.id },
        { identity: elsewhere, channelId: channel.id },
      ]);
      expect([...found.keys()]).toEqual([identityKey(known1)]);
      expect(found.get(identityKey(known1))).toMatchObject({ id: known.id, first_name: 'Known' });
      expect(found).toEqual(await contactIdentitiesRepository.find(trx, tenant.businessId, [known1, elsewhere]));

      expect(await holds(trx, `${tenant.businessId}:conversation:${known.id}:${channel.id}`)).toBe(true);
      expect(await advisoryLocks(trx)).toBe(1);

      if (engine === 'postgres') {
        // Another connection cannot take it while this transaction runs.
        const { rows } = await sql<{
          got: boolean;
        }>`select pg_try_advisory_xact_lock(hashtextextended(${`${tenant.businessId}:conversation:${known.id}:${channel.id}`}, 0)) as got`.execute(
          t.database.db,
        );
        expect(rows[0].got).toBe(false);
      }
    });
  });

  it('takes no lock when no sender is known', async () => {
    await t.database.db.transaction().execute(async (trx) => {
      const found = await inboundRepository.sendersByIdentity(trx, tenant.businessId, [
        { identity: { kind: 'phone', value: phoneKey('5491155550303') }, channelId: channel.id },
      ]);
      expect(found.size).toBe(0);
      expect(await advisoryLocks(trx)).toBe(0);
    });
  });
});
