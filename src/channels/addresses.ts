import { normalisePhone } from '../lib/phone.ts';

/**
 * How a channel addresses a person: by phone number (WhatsApp, SMS), email address, an id the
 * provider scopes to the business's page (Messenger's PSID) or to its Instagram account (IGSID: a
 * kind of its own, since one person has a different id on each and a contact may hold both), the
 * conversation the provider keeps between the business and the person (TikTok's conversation id,
 * which its sends name), or a visitor id (web widget).
 */
export type AddressKind =
  'phone' | 'email' | 'page_scoped_id' | 'instagram_scoped_id' | 'tiktok_conversation_id' | 'visitor_id';

/** An address as stored (`value`) and as looked up (`key`, equal for two forms of one address). */
export interface NormalisedAddress {
  value: string;
  key: string;
}

/** An address a provider reported: stored however it reads (`value` null when nothing of it is storable). */
export interface ReportedAddress {
  value: string | null;
  key: string;
}

/** The rules of one address kind, as a channel kind declares them (registry.ts). */
export interface ChannelAddress {
  kind: AddressKind;
  /** What an address of this kind is, for refusals ("to is not <description>"). */
  description: string;
  /** An address a client gave (a send's recipient), or undefined when it is not one of this kind. */
  normalise(text: string): NormalisedAddress | undefined;
  /**
   * An address the provider reported (an inbound sender): never refused, since the message is
   * stored whatever it is; what cannot be normalised is kept as well as it can be.
   */
  reported(text: string): ReportedAddress;
}

/** Phone numbers: digits with country code; the key drops the digits a country writes optionally (lib/phone.ts). */
export const phoneAddress: ChannelAddress = {
  kind: 'phone',
  description: 'a phone number with country code',
  normalise(text) {
    const phone = normalisePhone(text);
    return phone && { value: phone.digits, key: phone.key };
  },
  reported(text) {
    const phone = normalisePhone(text);
    if (phone) return { value: phone.digits, key: phone.key };
    const digits = text.replace(/\D/g, '');
    return { value: digits === '' ? null : digits, key: digits === '' ? text : digits };
  },
};

/** A plain address: local part, @, a domain with a dot; no spaces nor angle brackets (a display name is none). */
const EMAIL = /^[^\s@<>()",;:]+@[^\s@<>()",;:]+\.[^\s@<>()",;:]+$/;

/** Email addresses: trimmed; the key is lower-cased, as contacts' email identities are (contact-identity.ts). */
export const emailAddress: ChannelAddress = {
  kind: 'email',
  description: 'an email address',
  normalise(text) {
    const value = text.trim();
    if (value.length > 320 || !EMAIL.test(value)) return undefined;
    return { value, key: value.toLowerCase() };
  },
  reported(text) {
    const value = text.trim();
    return { value: value === '' ? null : value, key: value.toLowerCase() };
  },
};
/** The longest provider-scoped id kept: Meta's are 16 or 17 digits. */
const MAX_SCOPED_ID_LENGTH = 64;

/**
 * Ids a provider scopes to the business's account (Meta's PSID, IGSID): digits, kept as given.
 * One reported otherwise is kept as it reads, so its message is still stored.
 */
function scopedIdAddress(kind: 'page_scoped_id' | 'instagram_scoped_id', description: string): ChannelAddress {
  return {
    kind,
    description,
    normalise(text) {
      const id = text.trim();
      return /^[0-9]+$/.test(id) && id.length <= MAX_SCOPED_ID_LENGTH ? { value: id, key: id } : undefined;
    },
    reported(text) {
      const id = text.trim();
      return { value: id === '' ? null : id, key: id === '' ? text : id };
    },
  };
}

/** Messenger's page-scoped ids (PSID). */
export const pageScopedIdAddress = scopedIdAddress('page_scoped_id', "a page-scoped id (Messenger's PSID)");

/** Instagram's account-scoped ids (IGSID). */
export const instagramScopedIdAddress = scopedIdAddress(
  'instagram_scoped_id',
  "an Instagram-scoped id (Instagram's IGSID)",
);

/**
 * Visitor ids of the website widget: issued by the service (letters, digits, `_`, `-`), so kept as
 * they are; anything else is no visitor id.
 */
export const visitorAddress: ChannelAddress = {
  kind: 'visitor_id',
  description: 'a visitor id',
  normalise(text) {
    return /^[A-Za-z0-9_-]{1,100}$/.test(text) ? { value: text, key: text } : undefined;
  },
  reported(text) {
    return { value: text, key: text };
  },
};

/** What a TikTok conversation id is made of: letters, digits and a few separators, no spaces. */
const TIKTOK_CONVERSATION_ID = /^[A-Za-z0-9._:=+/-]{1,256}$/;

/**
 * TikTok's conversation ids (Business Messaging): one per business account and person, the
 * recipient its Send API names (`recipient_type: CONVERSATION`). Kept as given; one reported
 * otherwise is kept as it reads, so its message is still stored.
 */
export const tiktokConversationIdAddress: ChannelAddress = {
  kind: 'tiktok_conversation_id',
  description: "a TikTok conversation id (the Business Messaging API's conversation_id)",
  normalise(text) {
    const id = text.trim();
    return TIKTOK_CONVERSATION_ID.test(id) ? { value: id, key: id } : undefined;
  },
  reported(text) {
    const id = text.trim();
    return { value: id === '' ? null : id, key: id === '' ? text : id };
  },
};
