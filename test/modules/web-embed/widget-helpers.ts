import { createHmac, randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { adminHeaders } from '../../helpers/tenants.ts';

export const SITE = 'https://shop.example';

/** A widget id nobody else in the run uses. */
export const newWidgetId = () => `w_${randomBytes(8).toString('hex')}`;

export interface WidgetChannel {
  id: string;
  widgetId: string;
}

/** A website widget channel of the business, made through the operator API. */
export async function createWidgetChannel(
  app: FastifyInstance,
  businessId: string,
  provider: Record<string, unknown> = {},
): Promise<WidgetChannel> {
  const widgetId = newWidgetId();
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/channels`,
    headers: adminHeaders,
    payload: {
      type: 'web_embed',
      identifier: widgetId,
      provider: { kind: 'web_embed', widget_id: widgetId, allowed_origins: [SITE], ...provider },
    },
  });
  if (res.statusCode !== 201) throw new Error(`create channel: ${res.body}`);
  return { id: res.json().channel.id as string, widgetId };
}

/** What the business's server computes for identity validation: hex HMAC-SHA256 of the external id. */
export const identityHash = (secret: string, externalId: string) =>
  createHmac('sha256', secret).update(externalId).digest('hex');
