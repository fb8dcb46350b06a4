import { visitorAddress } from '../addresses.ts';
import { defineChannelKind } from '../channel-kind.ts';
import { WebEmbedConfigSchema } from './web-embed.config.ts';
import { WebEmbedProvider } from './web-embed.provider.ts';

/**
 * The website widget: channels of type `web_embed`, addressed by visitor id, whose visitors write
 * and read through the widget's own routes (src/surfaces/widget-api.ts) over a held connection.
 */
export const webEmbedKind = defineChannelKind({
  kind: 'web_embed',
  schema: WebEmbedConfigSchema,
  create: (config) => new WebEmbedProvider(config),
  secretFields: ['identity_secret'],
  rotatingFields: ['identity_secret'],
  changeableFields: ['allowed_origins', 'away_message'],
  urlFields: [],
  lookupFields: [],
  accountField: 'widget_id',
  identifierIsAccount: true,
  title: 'Website widget',
  channelTypes: ['web_embed'],
  address: visitorAddress,
  capabilities: {
    serviceWindowHours: null,
    templates: false,
    // Nothing leaves the service: the pace only bounds the send job's work.
    defaultPacePerSecond: 50,
    // The widget shows the business's files by their URL (image inline, the others as links).
    mediaKinds: ['image', 'document', 'audio', 'video'],
  },
  createDocs: `Website widget: \`provider\` is {kind: "web_embed", widget_id (public: the script tag's data-channel),
allowed_origins (the sites that embed it), away_message? (shown when no one of the team is around),
identity_secret? (identity validation's HMAC key)}.`,
  inbound: { type: 'socket' },
});
