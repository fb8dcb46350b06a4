import type { SendRequest } from '../channel.types.ts';
import { ProviderError } from '../provider-error.ts';

/** What differs between the products' Send API bodies. */
export interface SendOptions {
  /** Messenger echoes `message.metadata` in its message echoes; Instagram takes none. */
  metadata: boolean;
}

/** Body of `POST /{page or account id}/messages` (Meta's Send API). */
export interface MetaSendBody {
  recipient: { id: string };
  messaging_type: 'RESPONSE' | 'MESSAGE_TAG';
  tag?: 'HUMAN_AGENT';
  message:
    | { text: string; metadata?: string }
    | { attachment: { type: string; payload: { url: string; is_reusable: false } }; metadata?: string };
}

// The Send API's attachment types; a document goes as a file.
const attachmentTypes = { image: 'image', audio: 'audio', video: 'video', document: 'file' } as const;

/**
 * The exact JSON body of a send. Free-form only (these products have no templates); a media caption
 * is not sent (an attachment carries none). A message a person sends past the standard window goes
 * with the HUMAN_AGENT tag.
 */
export function buildMetaSendBody(request: SendRequest, options: SendOptions): MetaSendBody {
  const { content } = request;
  const metadata = options.metadata && request.reference ? { metadata: request.reference } : {};
  let message: MetaSendBody['message'];
  if (content.kind === 'text') message = { text: content.text, ...metadata };
  else if (content.kind === 'media' && content.mediaKind !== 'sticker') {
    const type = attachmentTypes[content.mediaKind];
    message = { attachment: { type, payload: { url: content.url, is_reusable: false } }, ...metadata };
  } else throw new ProviderError('unsupported_content', `the Send API does not send this content`, false);
  const tagged = content.extendedWindow === true;
  return {
    recipient: { id: request.to },
    messaging_type: tagged ? 'MESSAGE_TAG' : 'RESPONSE',
    ...(tagged ? { tag: 'HUMAN_AGENT' as const } : {}),
    message,
  };
}
