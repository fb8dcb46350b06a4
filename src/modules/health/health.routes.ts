import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { sql } from 'kysely';
import { Type } from 'typebox';
import type { Db } from '../../db/database.ts';

const Status = Type.Object({ status: Type.String() });

export const healthRoutes: FastifyPluginAsyncTypebox<{ db: Db }> = async (app, { db }) => {
  app.get(
    '/healthz',
    { schema: { tags: ['health'], summary: 'The process is up', response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  );
  app.get(
    '/readyz',
    { schema: { tags: ['health'], summary: 'The database answers', response: { 200: Status, 503: Status } } },
    async (_request, reply) => {
      try {
        await sql`select 1`.execute(db);
        return { status: 'ready' };
      } catch {
        return reply.status(503).send({ status: 'database unreachable' });
      }
    },
  );
};
