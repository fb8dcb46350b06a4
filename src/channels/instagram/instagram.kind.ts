import { Type } from 'typebox';
import { instagramScopedIdAddress } from '../addresses.ts';
import { metaAppProperties } from '../meta/meta.config.ts';
import { str } from '../meta/meta.read.ts';
import { defineMetaMessagingKind } from '../meta/messaging.kind.ts';

/** A channel's `provider` object for an Instagram professional account's direct messages. */
export const InstagramConfigSchema = Type.Object(
  {
    kind: Type.Literal('instagram'),
    account_id: Type.String({ pattern: '^[0-9]{1,32}$', description: "The Instagram professional account's id" }),
    ...metaAppProperties,
  },
  { additionalProperties: false },
);

/** Instagram messaging (Meta's Messenger Platform): channels of type `instagram`, addressed by IGSID. */
export const instagramKind = defineMetaMessagingKind({
  kind: 'instagram',
  schema: InstagramConfigSchema,
  accountField: 'account_id',
  object: 'instagram',
  title: 'Instagram (direct messages)',
  product: 'Instagram',
  accountName: 'Instagram account',
  channelTypes: ['instagram'],
  address: instagramScopedIdAddress,
  send: {
    metadata: false,
    profileFields: 'name,username,profile_pic',
    profile: (answer) => {
      const name = str(answer.name) ?? str(answer.username);
      const avatar = str(answer.profile_pic);
      if (!name && !avatar) return null;
      const [firstName, ...rest] = (name ?? '').trim().split(/\s+/);
      return { firstName, lastName: rest.join(' '), ...(avatar ? { avatar } : {}) };
    },
  },
  createDocs: `Instagram: \`identifier\` is the Instagram account id and \`provider\` is required: {kind: "instagram",
account_id, access_token, app_secret, verify_token, api_base_url?}.`,
});
