import type { MediaKind, OutboundContent } from '../../channels/provider.ts';
import { DomainError, invalid } from '../../lib/domain-errors.ts';
import type { SendBody } from './sending.schemas.ts';

/** What a free-form send delivers, and the text stored with the message. */
export interface FreeFormContent {
  content: OutboundContent;
  text: string;
}

const captionKinds = new Set<MediaKind>(['image', 'video', 'document']);
const field = (name: string) => [{ path: `/content/${name}` }];

/** Outbound content of a text or media send; refuses fields that do not belong to the type. */
export function freeFormContent(
  type: Exclude<SendBody['type'], 'template'>,
  content: SendBody['content'],
): FreeFormContent {
  if (type === 'text') {
    if (content.text === undefined) throw invalid('a text message needs content.text', field('text'));
    for (const name of ['url', 'caption', 'filename'] as const) {
      if (content[name] !== undefined) throw invalid(`content.${name} does not belong to a text message`, field(name));
    }
    return { content: { kind: 'text', text: content.text }, text: content.text };
  }
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

/** The contact refused messages (collected_data.opted_out) and the send does not record a new opt-in. */
export const blocked = () =>
  new DomainError(
    'invalid',
    'blocked',
    'the contact opted out of messages; send optin_contact: true once they opted in again',
  );

/** Outside the 24-hour service window only templates may be sent. */
export const templateRequired = () =>
  new DomainError(
    'invalid',
    'template_required',
    'the contact has not written on this channel in the last 24 hours; send a template',
  );
