import { Type } from 'typebox';
import { pageScopedIdAddress } from '../addresses.ts';
import { metaAppProperties } from '../meta/meta.config.ts';
import { str } from '../meta/meta.read.ts';
import { defineMetaMessagingKind } from '../meta/messaging.kind.ts';

/** A channel's `provider` object for a Facebook page's Messenger conversations. */
export const MessengerConfigSchema = Type.Object(
  {
    kind: Type.Literal('messenger'),
    page_id: Type.String({ pattern: '^[0-9]{1,32}$', description: "The Facebook page's id" }),
    ...metaAppProperties,
  },
  { additionalProperties: false },
);

/** Messenger (Meta's Messenger Platform): channels of type `messenger`, addressed by page-scoped id. */
export const messengerKind = defineMetaMessagingKind({
  kind: 'messenger',
  schema: MessengerConfigSchema,
  accountField: 'page_id',
  object: 'page',
  title: 'Messenger (Facebook page)',
  product: 'Messenger',
  accountName: 'page',
  channelTypes: ['messenger'],
  address: pageScopedIdAddress,
  // Messenger's HUMAN_AGENT tag: a person may answer for 7 days after the person's last message.
  humanWindowHours: 168,
  send: {
    metadata: true,
    profileFields: 'first_name,last_name,profile_pic',
    profile: (answer) => {
      const firstName = str(answer.first_name) ?? '';
      const lastName = str(answer.last_name) ?? '';
      const avatar = str(answer.profile_pic);
      return firstName || lastName || avatar ? { firstName, lastName, ...(avatar ? { avatar } : {}) } : null;
    },
  },
  createDocs: `Messenger: \`identifier\` is the page id and \`provider\` is required: {kind: "messenger", page_id,
access_token (the page's access token), app_secret, verify_token, api_base_url?}.`,
});
