import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from './errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The business that owns the request's API key; set by the API-key hook. */
    businessId: string;
  }
}

/** Resolves an API key to its business, or to nothing for an unknown or revoked key. */
export type KeyResolver = (key: string) => Promise<string | undefined>;

const unauthorized = (message: string) => new AppError(401, 'unauthorized', message);

/** Requires `X-API-Key` on every route of the scope it is registered in. */
export function requireApiKey(scope: FastifyInstance, resolve: KeyResolver): void {
  scope.decorateRequest('businessId', '');
  scope.addHook('onRequest', async (request: FastifyRequest) => {
    const header = request.headers['x-api-key'];
    if (header === undefined || header === '') throw unauthorized('missing X-API-Key header');
    if (typeof header !== 'string') throw unauthorized('send exactly one X-API-Key header');
    const businessId = await resolve(header);
    if (!businessId) throw unauthorized('invalid or revoked API key');
    request.businessId = businessId;
  });
}
