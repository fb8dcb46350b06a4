/**
 * One way a contact is reached or known: its phone (by its country-variant-free key, lib/phone.ts),
 * its email (lower-cased), the business's own id for it, or the address a channel knows it by (a
 * page-scoped id, a visitor id...), named by the channel's address kind.
 */
export interface ContactIdentity {
  kind: 'phone' | 'email' | 'external_id' | (string & {});
  value: string;
}

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
 * never create two: phone and email have no unique index, since imports and merges may hold twins.
 */
export const identityLockName = (identity: ContactIdentity): string =>
  `${LOCK_PREFIX[identity.kind] ?? identity.kind}:${identity.value}`;
