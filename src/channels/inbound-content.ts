import type { InboundMessage, InboundMessageType } from './channel.types.ts';

/** The typed part of an inbound message. */
export type InboundContent = Pick<
  InboundMessage,
  'type' | 'text' | 'media' | 'location' | 'contacts' | 'interactive' | 'button' | 'reaction'
>;

/** The typed part of an inbound message of `type`, all of it empty: an adapter fills in what its message has. */
export const emptyContent = (type: InboundMessageType): InboundContent => ({
  type,
  text: null,
  media: null,
  location: null,
  contacts: [],
  interactive: null,
  button: null,
  reaction: null,
});
