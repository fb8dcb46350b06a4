import type { FastifyInstance } from 'fastify';
import { ADMIN_TOKEN } from './test-app.ts';

export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** A business with an API key, made through the operator API as an operator would. */
export interface Tenant {
  businessId: string;
  key: string;
  headers: { 'x-api-key': string };
}

export async function createTenant(app: FastifyInstance, name = 'Acme'): Promise<Tenant> {
  const business = await app.inject({
    method: 'POST',
    url: '/admin/v1/businesses',
    headers: adminHeaders,
    payload: { name },
  });
  if (business.statusCode !== 201) throw new Error(`create business: ${business.body}`);
  const businessId = business.json().business.id as string;
  const key = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/api-keys`,
    headers: adminHeaders,
    payload: {},
  });
  if (key.statusCode !== 201) throw new Error(`create key: ${key.body}`);
  const apiKey = key.json().key as string;
  return { businessId, key: apiKey, headers: { 'x-api-key': apiKey } };
}
