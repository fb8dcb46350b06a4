import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import stringify from 'safe-stable-stringify';
import { Type, type TSchema } from 'typebox';
import type { IdempotencyClaim, IdempotencyService } from '../modules/idempotency/idempotency.service.ts';
import { AppError, conflict } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Makes a route honour the `Idempotency-Key` header; the value names the route in the key
     * records (e.g. `messages.send`). One line per route: `config: { idempotency: 'messages.send' }`.
     */
    idempotency?: string;
  }
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

const KeyHeader = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x20-\\x7E]+$',
  description:
    'Any unique string of 1-255 printable characters (a UUID, say). A repeat within 24 hours with the same body replays ' +
    'the first answer (header `Idempotent-Replayed: true`); with a different body it answers 422 `idempotency_key_reused`; ' +
    'while the first is still running, 409 `conflict`. 5xx answers are not kept, so they can be retried with the same key. ' +
    'A send stores its answer in the transaction that accepts it, so a repeat after a lost answer or a server restart replays it; ' +
    'a first request that has not answered after 60 seconds counts as abandoned (it stored nothing) and a repeat runs in its place.',
});

/** The fingerprint of a request: what a repeat must match to be replayed. */
export function requestHash(method: string, route: string, body: unknown, query: unknown): string {
  const canonical = stringify({ method, route, query: query ?? {}, body: body ?? null }) ?? '';
  return createHash('sha256').update(canonical).digest('hex');
}

/** The claims of the requests running under a key, for the hooks and for idempotencyClaimOf. */
const claims = new WeakMap<FastifyRequest, IdempotencyClaim>();

/**
 * The claim a request holds on its Idempotency-Key (undefined without a key). A route whose work
 * writes something passes it to its service, which stores the answer in the same transaction
 * (storeAnswerIn): a crash between the commit and the answer then leaves a key that replays.
 */
export function idempotencyClaimOf(request: FastifyRequest): IdempotencyClaim | undefined {
  return claims.get(request);
}

/**
 * Adds the Idempotency-Key behaviour (docs/ARCHITECTURE.md#idempotency) to every route of `scope` whose config names an
 * `idempotency` route. Register before the routes; the records are scoped by `businessOf` the request
 * (the API key's business, or the dashboard session's).
 */
export function registerIdempotency(
  scope: FastifyInstance,
  service: IdempotencyService,
  businessOf: (request: FastifyRequest) => string = (request) => request.businessId,
): void {
  // The header joins the route's OpenAPI description and is validated with the rest of the request.
  scope.addHook('onRoute', (route) => {
    if (!route.config?.idempotency) return;
    const schema = (route.schema ??= {}) as { headers?: TSchema };
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- Fastify types it loosely
    const existing = schema.headers as { properties?: Record<string, TSchema> } | undefined;
    schema.headers = Type.Object({ ...(existing?.properties ?? {}), [IDEMPOTENCY_HEADER]: Type.Optional(KeyHeader) });
  });

  scope.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    const route = request.routeOptions.config.idempotency;
    const key = request.headers[IDEMPOTENCY_HEADER];
    if (!route || key === undefined) return;
    if (typeof key !== 'string' || !/^[\x20-\x7E]{1,255}$/.test(key)) {
      throw new AppError(400, 'validation_error', 'Idempotency-Key must be 1-255 printable characters');
    }
    const decision = await service.begin(
      { businessId: businessOf(request), route, key },
      requestHash(request.method, route, request.body, request.query),
    );
    switch (decision.kind) {
      case 'run':
        claims.set(request, decision.claim);
        return;
      case 'replay':
        return reply.header(REPLAYED_HEADER, 'true').status(decision.statusCode).send(decision.response);
      case 'reused':
        throw new AppError(422, 'idempotency_key_reused', 'this Idempotency-Key was used with a different request');
      case 'running':
        throw conflict('a request with this Idempotency-Key is still running; retry later');
    }
  });

  // The answer is stored before it leaves, so a repeat that follows it always finds it.
  scope.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const claim = claims.get(request);
    if (!claim) return payload;
    claims.delete(request);
    const body = typeof payload === 'string' ? parseJson(payload) : undefined;
    if (body === undefined) await service.release(claim);
    else await service.finish(claim, reply.statusCode, body);
    return payload;
  });

  // A request that ended without onSend (aborted, serialisation failure) must not hold its key.
  scope.addHook('onResponse', async (request: FastifyRequest) => {
    const claim = claims.get(request);
    if (!claim) return;
    claims.delete(request);
    await service.release(claim);
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
