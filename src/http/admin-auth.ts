import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Requires `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time. */
export function requireAdminToken(scope: FastifyInstance, adminToken: string): void {
  const expected = digest(adminToken);
  scope.addHook('onRequest', async (request) => {
    const header = request.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    if (!token || !timingSafeEqual(digest(token), expected)) {
      throw new AppError(401, 'unauthorized', 'missing or invalid operator token');
    }
  });
}
