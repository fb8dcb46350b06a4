/**
 * Channel values of the contract (a conversation's and a channel's `channel` / `type`): the one list
 * every schema that names channel types is built from. These are the API's words, not provider
 * kinds: a provider kind (registry.ts) serves one or more of them.
 */
export const CHANNELS = [
  'whatsapp',
  'whatsapp_web',
  'instagram',
  'messenger',
  'tiktok',
  'email',
  'sms',
  'web_embed',
  'hubspot_chat',
  'voice',
] as const;

/** One channel value of the contract. */
export type ChannelType = (typeof CHANNELS)[number];

/** Whether `value` is a channel value of the contract. */
export function isChannelType(value: unknown): value is ChannelType {
  return typeof value === 'string' && (CHANNELS as readonly string[]).includes(value);
}
