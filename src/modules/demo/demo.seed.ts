import type { Services } from '../../services.ts';

/**
 * On the first start of an empty embedded database: a demo business with an API key, so a newcomer
 * can call the API at once. Returns the key (to print once) or undefined when the database had data.
 */
export async function seedDemoIfEmpty(services: Services): Promise<{ key: string; contactPhone: string } | undefined> {
  if (!(await services.businesses.isEmpty())) return undefined;
  const business = await services.businesses.create('Demo business');
  const { key } = await services.apiKeys.create(business.id, 'demo');
  return { key, contactPhone: '5491123456789' };
}
