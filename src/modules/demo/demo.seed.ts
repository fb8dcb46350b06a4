import type { Services } from '../../services.ts';
import { DEMO_AGENT, DEMO_CONTACT_PHONE, demoRecords } from './demo.data.ts';

/**
 * On the first start of an empty embedded database: a demo business with an API key, two custom
 * contact fields and a small history (contacts in several countries, conversations on several
 * channels, messages, events), loaded through the import like any migrated history, so a newcomer
 * can call the API at once, and the AI agent that answers in it. Returns the key (to print once), a
 * contact's phone to look up and the agent's id, or undefined when the database had data: it never
 * touches a database in use.
 */
export async function seedDemoIfEmpty(
  services: Services,
): Promise<{ key: string; contactPhone: string; agentId: string } | undefined> {
  if (!(await services.businesses.isEmpty())) return undefined;
  const business = await services.businesses.create('Demo business');
  const { key } = await services.apiKeys.create(business.id, 'demo');
  await services.contactFields.create(business.id, { key: 'plan', name: 'Plan' });
  await services.contactFields.create(business.id, { key: 'city', name: 'City' });
  const result = await services.imports.importRecords(business.id, demoRecords());
  if (result.error_count > 0) throw new Error(`demo data set did not load: ${JSON.stringify(result.errors)}`);
  const agent = await services.agents.create(business.id, DEMO_AGENT);
  return { key, contactPhone: DEMO_CONTACT_PHONE, agentId: agent.id };
}
