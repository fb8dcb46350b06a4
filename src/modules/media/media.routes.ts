import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses } from '../../http/common.schemas.ts';
import { AvatarParams, FileParams, FileQuery, MediaLinkSchema, MediaParams } from './media.schemas.ts';

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

/**
 * GET /files/:id: the bytes behind a signed address; no API key, the signature is the permission. GET
 * /files/avatars/...: a contact's picture, whose unguessable address is the permission.
 */
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

  app.get(
    '/files/avatars/:businessId/:name',
    {
      schema: {
        tags: ['media'],
        summary: "Download a contact's picture",
        description:
          "Use a contact's `avatarUrl` as given: a picture copied from the person's profile on the channel (Messenger, " +
          'Instagram). No API key: the address holds 128 random bits and is the permission, like a CDN address, so treat ' +
          'it as you would the picture itself. It does not expire. 404 when no picture is stored under it.',
        params: AvatarParams,
        response: responses({ 200: Type.Unknown({ description: 'the picture: PNG, JPEG, GIF or WebP' }) }, 400, 404),
      },
    },
    async (request, reply) => {
      const file = await app.services.media.openAvatar(request.params.businessId, request.params.name);
      return reply
        .type(file.contentType)
        .header('content-length', file.size)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'private, max-age=86400')
        .send(file.stream);
    },
  );
};
