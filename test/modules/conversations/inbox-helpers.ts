import type { FastifyInstance } from 'fastify';
import type { Db } from '../../../src/db/database.ts';
import { newId } from '../../../src/lib/ids.ts';
import { adminHeaders } from '../../helpers/tenants.ts';
import { createUser } from '../dashboard-auth/dashboard-helpers.ts';

/** POSTs to the operator API of a business and answers the created object under `key`. */
async function create<T>(app: FastifyInstance, businessId: string, path: string, payload: object, key: string) {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/businesses/${businessId}/${path}`,
    headers: adminHeaders,
    payload,
  });
  if (res.statusCode !== 201) throw new Error(`POST ${path}: ${res.body}`);
  return res.json()[key] as T;
}

/** A user named `name`, with an email of its own, made through the operator API. */
export async function createNamedUser(app: FastifyInstance, businessId: string, name: string) {
  const email = `${name.toLowerCase().replace(/\W/g, '')}-${newId().slice(-6)}@example.com`;
  const { id } = await createUser(app, businessId, { email, name });
  return { id, name };
}

export const createTeam = (app: FastifyInstance, businessId: string, name: string) =>
  create<{ id: string; name: string }>(app, businessId, 'teams', { name }, 'team');

export const createAgent = (app: FastifyInstance, businessId: string, name: string) =>
  create<{ id: string; name: string }>(app, businessId, 'agents', { name }, 'agent');

/** A channel row as the operator API would leave it (its provider config is not read here). */
export async function insertChannel(db: Db, businessId: string, type: string, name: string) {
  return db
    .insertInto('channels')
    .values({
      business_id: businessId,
      id: newId(),
      type,
      name,
      identifier: `${type}-${newId().slice(-8)}`,
      provider_config: {},
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}
