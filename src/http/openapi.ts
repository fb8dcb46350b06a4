import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { openApiWebhooks } from '../modules/webhooks/webhook-payload.schemas.ts';
import { ErrorBody } from './common.schemas.ts';

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
          'Public API under /external/v2 (header X-API-Key) and operator API under /admin/v1 (Bearer ADMIN_TOKEN). ' +
          'Errors answer {"error": {"code", "message", "details"?}}. Timestamps are ISO 8601 in UTC with microseconds.',
      },
      servers: [{ url: publicUrl }],
      webhooks: openApiWebhooks,
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          adminToken: { type: 'http', scheme: 'bearer' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) || `def-${i}` },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { url: '/openapi.json' } as never });
}
