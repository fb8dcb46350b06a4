import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { responses, Uuid } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import {
  ChannelKindForm,
  LinkBody,
  LinkView,
  ConnectChannelBody,
  ConnectedChannel,
  EditChannelBody,
  SettingsChannel,
} from './channel-setup.schemas.ts';

const tags = ['dashboard'];
const security = [{ sessionCookie: [] }];
const Params = Type.Object({ id: Uuid }, { additionalProperties: false });

/** The channels of the session's business, for admins and owners: connected, listed, re-paced, deleted. */
export const dashboardChannelsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { channelSetup } = app.services;
  const preHandler = requireRole('admin');

  app.get(
    '/channel-kinds',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary:
          'The provider kinds a channel can be connected with, and the fields of their forms (admins and owners)',
        response: responses({ 200: Type.Object({ kinds: Type.Array(ChannelKindForm) }) }, 401, 403),
      },
    },
    async () => ({ kinds: channelSetup.kinds() }),
  );

  app.get(
    '/channels',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: "The business's channels, oldest first (at most 500; admins and owners)",
        description: 'Their secrets are shown masked, never their values.',
        response: responses({ 200: Type.Object({ channels: Type.Array(SettingsChannel) }) }, 401, 403),
      },
    },
    async (request) => ({ channels: await channelSetup.list(request.dashboard.businessId, 500) }),
  );

  app.post(
    '/channels',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Connect a channel (admins and owners)',
        description:
          'The provider fields are those of GET /channel-kinds. The answer holds the webhook URL and the verify token to ' +
          'paste into the provider (made up when not sent); the token is shown only now. 409 when the business has a ' +
          'channel of this type and identifier, or any business has one on this provider account.',
        body: ConnectChannelBody,
        response: responses({ 201: ConnectedChannel }, 400, 401, 403, 409),
      },
    },
    async (request, reply) =>
      reply.status(201).send(await channelSetup.connect(request.dashboard.businessId, request.body)),
  );

  app.patch(
    '/channels/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Rename a channel or change its pace (admins and owners)',
        params: Params,
        body: EditChannelBody,
        response: responses({ 200: Type.Object({ channel: SettingsChannel }) }, 400, 401, 403, 404),
      },
    },
    async (request) => ({
      channel: await channelSetup.edit(request.dashboard.businessId, request.params.id, request.body),
    }),
  );

  app.get(
    '/channels/:id/link',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary:
          "A linked channel's link to the phone: its QR code or pairing code, linked, logged out (admins and owners)",
        description:
          'For a channel linked as a device (WhatsApp Web): `unlinked`, `qr` (with the QR code to scan, as text and as a ' +
          'PNG data URL, and the pairing code when one was asked for), `linked` or `logged_out`. 404 for another kind.',
        params: Params,
        response: responses({ 200: LinkView }, 400, 401, 403, 404),
      },
    },
    async (request) => app.services.channelLinks.view(request.dashboard.businessId, request.params.id),
  );

  app.post(
    '/channels/:id/link',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Link a channel to the phone (again): a QR code, or a pairing code for a number (admins and owners)',
        description:
          'The process holding the channel starts a link within seconds; poll GET for its QR code. With `phone_number`, ' +
          'a pairing code to type on that phone is shown as well.',
        params: Params,
        body: LinkBody,
        response: responses({ 200: LinkView }, 400, 401, 403, 404),
      },
    },
    async (request) =>
      app.services.channelLinks.request(request.dashboard.businessId, request.params.id, request.body.phone_number),
  );

  app.delete(
    '/channels/:id',
    {
      preHandler,
      schema: {
        tags,
        security,
        summary: 'Delete a channel; its conversations and messages stay (admins and owners)',
        description: "The operator API's deletion, for the session's business (404 for another's).",
        params: Params,
        response: responses({ 204: Type.Null() }, 400, 401, 403, 404),
      },
    },
    async (request, reply) => {
      await app.services.channels.remove(request.dashboard.businessId, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
