import { Type, type Static } from 'typebox';
import { metaAppProperties } from '../meta/meta.config.ts';

export { DEFAULT_GRAPH_API_BASE_URL } from '../meta/meta.config.ts';

/**
 * A channel's `provider` object for Meta's WhatsApp Cloud API, as the operator API takes it
 * (docs/API-GUIDE.md#whatsapp-channels-sending-templates-media).
 */
export const WhatsAppCloudConfigSchema = Type.Object(
  {
    kind: Type.Literal('whatsapp_cloud'),
    phone_number_id: Type.String({ pattern: '^[0-9]{1,32}$', description: "Meta's id of the business number" }),
    ...metaAppProperties,
  },
  { additionalProperties: false },
);

/** Configuration of one WhatsApp Cloud API channel. */
export type WhatsAppCloudConfig = Static<typeof WhatsAppCloudConfigSchema>;
