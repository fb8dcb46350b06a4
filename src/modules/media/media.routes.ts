import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { FileParams, FileQuery, MediaLinkSchema, MediaParams } from './media.schemas.ts';

/** GET /media/:id (API key): a fresh signed address of a file of the business. */
export const mediaRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/media/:id',
    {
      schema: {
        tags: ['media'],
        security: [{ apiKey: [] }],
        summary: 'Get a fresh download address of a file',
        description:
          'Answers a new signed `url` valid 120 minutes (`expiresAt`), also while the file is still being fetched from the ' +
          'channel. The address needs no API key; it answers 403 once expired or when altered, and 404 until the file is stored.',
        params: MediaParams,
        response: responses({ 200: Type.Object({ media: MediaLinkSchema }) }, 400, 401, 404),
      },
    },
    async (request) => ({ media: await app.services.media.get(request.businessId, request.params.id) }),
  );
};

/** GET /files/:id: the bytes behind a signed address; no API key, the signature is the permission. */
export const fileRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/files/:id',
    {
      schema: {
        tags: ['media'],
        summary: 'Download a file by its signed address',
        description:
          "Use the `url` of a message's `media` or of GET /external/v2/media/:id as given. 403 for a bad or expired signature; 404 while the file is not stored yet.",
        params: FileParams,
        querystring: FileQuery,
        response: responses({ 200: Type.Unknown({ description: 'the file, with its content type' }) }, 403, 404),
      },
    },
    async (request, reply) => {
      const file = await app.services.media.open({ id: request.params.id, ...request.query });
      return reply
        .type(file.contentType)
        .header('content-length', file.size)
        .header('content-disposition', file.contentDisposition)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'private, max-age=600')
        .send(file.stream);
    },
  );
};
