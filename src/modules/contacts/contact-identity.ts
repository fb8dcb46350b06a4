import type { AddressKind } from '../../channels/addresses.ts';

/**
 * One way a contact is reached or known: its phone (by its country-variant-free key, lib/phone.ts),
 * its email (lower-cased), the business's own id for it, or the address a channel knows it by (a
 * page-scoped id, a visitor id...), named by the channel's address kind.
 */
export interface ContactIdentity {
  kind: 'phone' | 'email' | 'external_id' | (string & {});
  value: string;
}

/**
 * An identity a channel addresses the contact by, of an address kind (channels/addresses.ts):
 * what `contact_identities` holds, one contact per (business, kind, value), the one traffic from
 * that address lands on (docs/ARCHITECTURE.md#contact-identities).
 */
export interface AddressIdentity extends ContactIdentity {
  kind: AddressKind;
}

/**
 * The address kinds a contact holds in its own columns (phone_key, lower(email)) and as merge
 * aliases: their identities are derived from those, by the contacts repository as it writes them.
 * Identities of the other kinds have no column: they are given with their contact.
 */
export const COLUMN_KINDS: readonly AddressKind[] = ['phone', 'email'];

/**
 * The identities a contact holds in its own columns: its phone key and its email, which the caller
 * gives lower-cased by the database (lower(email), as the identities are kept).
 */
export function columnIdentities(keys: { phone_key: string | null; email: string | null }): AddressIdentity[] {
  const identities: AddressIdentity[] = [];
  if (keys.phone_key !== null) identities.push({ kind: 'phone', value: keys.phone_key });
  if (keys.email !== null) identities.push({ kind: 'email', value: keys.email });
  return identities;
}

/** A map key for an identity (kinds hold no colon). */
export const identityKey = (identity: ContactIdentity): string => `${identity.kind}:${identity.value}`;

// The names of the first kinds predate identities (a phone's is `phone_number:<key>`): kept, so that
// processes of two versions running side by side still take the same locks.
const LOCK_PREFIX: Record<string, string> = {
  phone: 'phone_number',
  email: 'email',
  external_id: 'external_id',
};

/**
 * The advisory-lock name of an identity. Every writer that may create a contact with it (the API's
 * creation, an inbound message from it, a send to it) takes this lock first, so they take turns and
 * never create two: the contacts' phone and email columns have no unique index, since imports and
 * merges may hold twins.
 */
export const identityLockName = (identity: ContactIdentity): string =>
  `${LOCK_PREFIX[identity.kind] ?? identity.kind}:${identity.value}`;
