import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { channelKinds } from '../../channels/registry.ts';
import { responses } from '../../http/common.schemas.ts';
import { BusinessItemParams, BusinessParams, ListQuery } from '../admin/admin.schemas.ts';
import { Channel, CreateChannelBody, UpdateChannelBody } from './channels.schemas.ts';

const tags = ['operator'];
const security = [{ adminToken: [] }];
const One = Type.Object({ channel: Channel });

const urlFields = [...new Set(channelKinds.flatMap((k) => k.urlFields))].join(', ');
/** What a provider URL may be: the address policy of webhook targets, since every call carries the channel's token. */
const urlRule = `A provider URL (${urlFields}) is http(s) without credentials (400 otherwise); unless the service
runs with ALLOW_PRIVATE_WEBHOOK_TARGETS=true, a loopback, private, link-local or metadata address (literal, or what the
host name resolves to when the URL is set) is refused with 400, and every call (sends, media downloads) is checked
on the address it connects to.`;

const createDescription = `A channel the business sends and receives on; its \`id\` is the \`channel_uuid\` of sends.
${channelKinds.map((k) => k.createDocs).join('\n')}
The provider's secrets are stored encrypted (AES-256-GCM, key derived from SECRET_KEY) and never shown again.
${urlRule}
409 when the business already has a channel of this type and identifier, or any business has one on this provider
account (${channelKinds.map((k) => k.accountField).join(', ')}).`;

/** Operator routes for the channels of a business (registered inside the admin business scope). */
export const channelsAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { channels } = app.services;

  app.post(
    '/businesses/:bid/channels',
    {
      schema: {
        tags,
        security,
        summary: 'Create a channel',
        description: createDescription,
        params: BusinessParams,
        body: CreateChannelBody,
        response: responses({ 201: One }, 400, 401, 404, 409),
      },
    },
    async (request, reply) =>
      reply.status(201).send({ channel: await channels.create(request.params.bid, request.body) }),
  );

  app.get(
    '/businesses/:bid/channels',
    {
      schema: {
        tags,
        security,
        summary: 'List the channels of the business, oldest first',
        params: BusinessParams,
        querystring: ListQuery,
        response: responses({ 200: Type.Object({ channels: Type.Array(Channel) }) }, 400, 401, 404),
      },
    },
    async (request) => ({ channels: await channels.list(request.params.bid, request.query.limit ?? 100) }),
  );

  app.get(
    '/businesses/:bid/channels/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Read a channel (without its secrets)',
        params: BusinessItemParams,
        response: responses({ 200: One }, 400, 401, 404),
      },
    },
    async (request) => ({ channel: await channels.read(request.params.bid, request.params.id) }),
  );

  app.patch(
    '/businesses/:bid/channels/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Rename a channel, change its pace or rotate its provider secrets',
        description:
          'Fields sent replace the stored ones; `provider` fields are merged into the stored provider config ' +
          `(${channelKinds.map((k) => k.accountField).join(', ')} cannot change). ${urlRule}`,
        params: BusinessItemParams,
        body: UpdateChannelBody,
        response: responses({ 200: One }, 400, 401, 404),
      },
    },
    async (request) => ({ channel: await channels.update(request.params.bid, request.params.id, request.body) }),
  );

  app.delete(
    '/businesses/:bid/channels/:id',
    {
      schema: {
        tags,
        security,
        summary: 'Delete a channel; its conversations and messages stay',
        params: BusinessItemParams,
        response: responses({ 200: Type.Object({ success: Type.Boolean() }) }, 400, 401, 404),
      },
    },
    async (request) => channels.remove(request.params.bid, request.params.id),
  );
};
