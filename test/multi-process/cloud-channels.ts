import { randomBytes, randomInt } from 'node:crypto';
import { expect } from 'vitest';
import type { FakeGraphApi } from '../helpers/fake-graph-api.ts';
import { ADMIN_TOKEN } from '../helpers/test-app.ts';
import type { ServerProcess } from './server-processes.ts';

/** The operator API's headers. */
export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

/** A WhatsApp Cloud API channel on the fake Graph API, with what its notifications are signed and addressed with. */
export interface CloudChannel {
  id: string;
  phoneNumberId: string;
  identifier: string;
  appSecret: string;
}

/**
 * Connects a WhatsApp Cloud API channel, on a new number and app secret, to the business through one
 * process's operator API; `fields` adds to the channel's body (a pace, an agent).
 */
export async function createCloudChannel(
  server: ServerProcess,
  businessId: string,
  graph: FakeGraphApi,
  fields: Record<string, unknown> = {},
): Promise<CloudChannel> {
  const appSecret = randomBytes(16).toString('hex');
  const phoneNumberId = String(randomInt(100_000_000, 999_999_999));
  const identifier = `1555${randomInt(1_000_000, 9_999_999)}`;
  const res = await fetch(`${server.url}/admin/v1/businesses/${businessId}/channels`, {
    method: 'POST',
    headers: adminHeaders,
    body: JSON.stringify({
      type: 'whatsapp',
      identifier,
      provider: {
        kind: 'whatsapp_cloud',
        phone_number_id: phoneNumberId,
        access_token: graph.accessToken,
        app_secret: appSecret,
        verify_token: `verify-${phoneNumberId}`,
        api_base_url: graph.baseUrl,
      },
      ...fields,
    }),
  });
  // The channel's answer, read field by field.
  const json: any = await res.json();
  expect(res.status, JSON.stringify(json)).toBe(201);
  return { id: json.channel.id as string, phoneNumberId, identifier, appSecret };
}
