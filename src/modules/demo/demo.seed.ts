import { randomBytes } from 'node:crypto';
import type { Services } from '../../services.ts';
import { DEMO_AGENT, DEMO_CONTACT_PHONE, demoRecords } from './demo.data.ts';

/** The dashboard login of the demo business's owner. */
export const DEMO_OWNER_EMAIL = 'owner@demo.example';

export interface DemoSeed {
  key: string;
  contactPhone: string;
  agentId: string;
  /** The demo owner's dashboard login; the password is stored only as its hash. */
  owner: { email: string; password: string };
}

/**
 * On the first start of an empty embedded database: a demo business with an API key, two custom
 * contact fields and a small history (contacts in several countries, conversations on several
 * channels, messages, events), loaded through the import like any migrated history, so a newcomer
 * can call the API at once, the AI agent that answers in it, and its owner, who signs in to the
 * dashboard with a password made now. Returns the key and the owner's password (to print once), a
 * contact's phone to look up and the agent's id, or undefined when the database had data: it never
 * touches a database in use.
 */
export async function seedDemoIfEmpty(services: Services): Promise<DemoSeed | undefined> {
  if (!(await services.businesses.isEmpty())) return undefined;
  const business = await services.businesses.create('Demo business');
  const { key } = await services.apiKeys.create(business.id, 'demo');
  await services.contactFields.create(business.id, { key: 'plan', name: 'Plan' });
  await services.contactFields.create(business.id, { key: 'city', name: 'City' });
  const result = await services.imports.importRecords(business.id, demoRecords());
  if (result.error_count > 0) throw new Error(`demo data set did not load: ${JSON.stringify(result.errors)}`);
  const agent = await services.agents.create(business.id, DEMO_AGENT);
  const owner = { email: DEMO_OWNER_EMAIL, password: randomBytes(12).toString('base64url') };
  await services.users.create(business.id, { ...owner, name: 'Demo Owner', role: 'owner' });
  return { key, contactPhone: DEMO_CONTACT_PHONE, agentId: agent.id, owner };
}
