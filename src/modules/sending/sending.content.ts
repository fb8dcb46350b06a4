import type { ChannelCapabilities, ChannelKind } from '../../channels/channel-kind.ts';
import type { MediaKind, OutboundContent } from '../../channels/provider.ts';
import { DomainError, invalid } from '../../lib/domain-errors.ts';
import { CAPTION_MAX_CHARS, TEXT_MAX_CHARS, type SendBody } from './sending.schemas.ts';

/** What a free-form send delivers, and the text stored with the message. */
export interface FreeFormContent {
  content: OutboundContent;
  text: string;
}

const captionKinds = new Set<MediaKind>(['image', 'video', 'document']);
const field = (name: string) => [{ path: `/content/${name}` }];

/**
 * Outbound content of a text or media send; refuses fields that do not belong to the type, a
 * media type the channel's kind does not send (its capabilities' mediaKinds), and a text or caption
 * its provider would refuse (`text_too_long`).
 */
export function freeFormContent(
  type: Exclude<SendBody['type'], 'template'>,
  content: SendBody['content'],
  kind: { capabilities: Pick<ChannelCapabilities, 'mediaKinds'>; textRefusal?: ChannelKind['textRefusal'] },
): FreeFormContent {
  const { capabilities } = kind;
  // The API's schema bounds what a client sends; a reply relayed from a helpdesk comes unbounded.
  for (const [name, max] of [
    ['text', TEXT_MAX_CHARS],
    ['caption', CAPTION_MAX_CHARS],
  ] as const) {
    if ((content[name]?.length ?? 0) > max)
      throw new DomainError(
        'invalid',
        'text_too_long',
        `content.${name} holds more than ${max} characters`,
        field(name),
      );
    const refusal = content[name] === undefined ? null : (kind.textRefusal?.(content[name]) ?? null);
    if (refusal !== null) throw new DomainError('invalid', 'text_too_long', refusal, field(name));
  }
  if (type === 'text') {
    if (content.text === undefined) throw invalid('a text message needs content.text', field('text'));
    for (const name of ['url', 'caption', 'filename'] as const) {
      if (content[name] !== undefined) throw invalid(`content.${name} does not belong to a text message`, field(name));
    }
    return { content: { kind: 'text', text: content.text }, text: content.text };
  }
  refuseUnsentMedia(type, capabilities);
  if (content.url === undefined) throw invalid(`a ${type} message needs content.url`, field('url'));
  if (content.text !== undefined)
    throw invalid(`content.text does not belong to a ${type} message; use content.caption`, field('text'));
  if (content.caption !== undefined && !captionKinds.has(type))
    throw invalid(`a ${type} message takes no caption`, field('caption'));
  if (content.filename !== undefined && type !== 'document')
    throw invalid('only a document takes a filename', field('filename'));
  return {
    content: {
      kind: 'media',
      mediaKind: type,
      url: content.url,
      ...(content.caption !== undefined ? { caption: content.caption } : {}),
      ...(content.filename !== undefined ? { filename: content.filename } : {}),
    },
    text: content.caption ?? '',
  };
}

/** A media type the channel's kind does not send (its capabilities' mediaKinds) is refused with 400. */
export function refuseUnsentMedia(type: MediaKind, capabilities: Pick<ChannelCapabilities, 'mediaKinds'>): void {
  if (capabilities.mediaKinds.includes(type)) return;
  const supported = capabilities.mediaKinds.length > 0 ? capabilities.mediaKinds.join(', ') : 'none';
  throw invalid(`this channel does not send ${type} messages; the media types it sends: ${supported}`, [
    { path: '/type', supported: [...capabilities.mediaKinds] },
  ]);
}

/**
 * The contact refused messages (collected_data.opted_out, or `<channel>_opted_out` for the channel's
 * type) and the send does not record a new opt-in.
 */
export const blocked = () =>
  new DomainError(
    'invalid',
    'blocked',
    'the contact opted out of messages; send optin_contact: true once they opted in again',
  );

/** A service window's length as answers and descriptions say it: "24 hours", "1 hour". */
export const windowLength = (hours: number) => `${hours} hour${hours === 1 ? '' : 's'}`;

/** Outside the service window of the channel's kind (`hours` long) only templates may be sent. */
export const templateRequired = (hours: number) =>
  new DomainError(
    'invalid',
    'template_required',
    `the contact has not written on this channel in the last ${hours === 1 ? 'hour' : windowLength(hours)}; send a template`,
  );

/**
 * Free-form content outside the service window on a kind without templates: nothing can be sent
 * until the contact writes again (`humanHours`: how long a person in the dashboard still may).
 */
export const windowClosed = (hours: number, humanHours?: number) =>
  new DomainError(
    'invalid',
    'window_closed',
    `the contact has not written on this channel in the last ${windowLength(hours)}, and the channel has no ` +
      `templates: nothing can be sent until they write again` +
      (humanHours ? ` (a person replying from the dashboard may for ${windowLength(humanHours)})` : ''),
  );

/** The channel's kind only receives (phone calls): nothing is sent through it. */
export const receiveOnly = (type: string) =>
  new DomainError(
    'invalid',
    'channel_receive_only',
    `${type} channels only receive: nothing can be sent through them`,
    [{ path: '/channel_uuid' }],
  );

/** The address a reply goes to names another contact now (a merge or an import moved it). */
export const addressMoved = () =>
  new DomainError(
    'conflict',
    'recipient_changed',
    "the conversation's contact no longer holds this address; write from the contact's current conversation",
  );
