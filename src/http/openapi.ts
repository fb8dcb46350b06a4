import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { Type } from 'typebox';
import { openApiWebhooks } from '../modules/webhooks/webhook-payload.schemas.ts';
import { ErrorBody } from './common.schemas.ts';

const errorRef = Type.Ref('ErrorBody');

/** The header fields of a 429 (docs/ARCHITECTURE.md#rate-limits), documented on every operation that can answer it. */
const rateLimited = {
  ...errorRef,
  headers: {
    'Retry-After': Type.Integer({ description: 'seconds until the window resets' }),
    'RateLimit-Policy': Type.String({ description: 'the limit, e.g. "exports";q=120;w=60' }),
    RateLimit: Type.String({ description: 'what is left of it, e.g. "exports";r=0;t=42' }),
  },
};

interface ObjectSchema {
  properties?: Record<string, { default?: unknown }>;
  required?: string[];
}

/**
 * What the routes share, added to the document rather than to each route's schema: a query
 * parameter with a default may be left out (validation fills it in, so the route's type has it);
 * every operation may answer 500, and one with a body 413 (over its body limit) and 415 (a content
 * type it does not read); a 429 carries its header fields.
 */
function documented(schema: FastifySchema | undefined, method: string, url: string): FastifySchema | undefined {
  if (!schema || (schema as { hide?: boolean }).hide) return schema;
  const described = schema as FastifySchema & { operationId?: string; security?: unknown[] };
  const response: Record<string | number, unknown> = { ...(schema.response as object | undefined), 500: errorRef };
  if (response[429]) response[429] = rateLimited;
  if (schema.body) {
    response[413] ??= errorRef;
    response[415] ??= errorRef;
  }
  const query = schema.querystring as ObjectSchema | undefined;
  const querystring = query?.required && {
    ...query,
    required: query.required.filter((name) => query.properties?.[name]?.default === undefined),
  };
  return {
    ...schema,
    operationId: described.operationId ?? operationId(method, url),
    // What declares no scheme answers without one (health, provider webhooks, signed files).
    security: described.security ?? [],
    ...(querystring ? { querystring } : {}),
    response,
  };
}

/**
 * A stable operationId from the method and path, for client generators that name methods after it:
 * `GET /external/v2/contacts/:uuid/messages` -> `getContactsByUuidMessages`; the operator API's
 * start with `admin`, the dashboard's with `dashboard`. Method and path are unique per route, so
 * the ids are too.
 */
export function operationId(method: string, url: string): string {
  const words = url
    .replace(/^\/external\/v2(?=\/|$)/, '')
    .replace(/^\/admin\/v1(?=\/|$)/, '/admin')
    .replace(/^\/dashboard\/api(?=\/|$)/, '/dashboard')
    .split(/[/_.-]+/)
    .filter((part) => part !== '')
    .map((part) => (part.startsWith(':') ? `by-${part.slice(1)}` : part))
    .flatMap((part) => part.split('-'));
  const camel = words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('');
  return `${method.toLowerCase()}${camel}`;
}

/**
 * The outbound webhooks the service calls, each with an operationId and no security scheme: the
 * receiver checks the call's signature, not a key.
 */
function withOperationIds(webhooks: Record<string, Record<string, object>>): Record<string, Record<string, object>> {
  return Object.fromEntries(
    Object.entries(webhooks).map(([name, operations]) => [
      name,
      Object.fromEntries(
        Object.entries(operations).map(([method, operation]) => [
          method,
          { operationId: name.replace(/_(.)/g, (_, c: string) => c.toUpperCase()), security: [], ...operation },
        ]),
      ),
    ]),
  );
}

/** The OpenAPI 3.1 document is generated from the same TypeBox schemas that validate requests. */
export async function registerOpenApi(app: FastifyInstance, publicUrl: string): Promise<void> {
  app.addSchema(ErrorBody);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Business Messaging and Contacts API',
        version: '2',
        description:
          'Public API under /external/v2 (header X-API-Key), operator API under /admin/v1 (Bearer ADMIN_TOKEN) and ' +
          "the dashboard's session API under /dashboard/api (cookie `session`, header x-csrf-token on writes). " +
          'Errors answer {"error": {"code", "message", "details"?}}. Timestamps are ISO 8601 in UTC with microseconds.',
      },
      servers: [{ url: publicUrl }],
      webhooks: withOperationIds(openApiWebhooks),
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          adminToken: { type: 'http', scheme: 'bearer' },
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: 'session',
            description:
              'The dashboard session, set by POST /dashboard/api/session; every write also sends its x-csrf-token header',
          },
          visitorToken: {
            type: 'http',
            scheme: 'bearer',
            description:
              "The website widget's visitor token, from POST /widget/v1/{widget}/sessions: one visitor of one widget",
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
    transform: ({ schema, url, route }) => ({
      schema: documented(schema, [route.method].flat()[0], route.url) as FastifySchema,
      url,
    }),
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { url: '/openapi.json' } });
}
