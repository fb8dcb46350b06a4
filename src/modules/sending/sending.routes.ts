import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses, UuidParams } from '../../http/common.schemas.ts';
import { idempotencyClaimOf } from '../../http/idempotency.ts';
import { channelKinds } from '../../channels/registry.ts';
import { windowLength } from './sending.content.ts';
import {
  MESSAGE_TYPES,
  MessageStatusResponse,
  SendBody,
  SendResponse,
  SendTemplateBody,
  SendTemplateQuery,
  SendTemplateResponse,
} from './sending.schemas.ts';

const tags = ['messages'];
const security = [{ apiKey: [] }];

// What the descriptions say of the channel kinds' capabilities, read from their entries: the kinds
// differ in them, and the document must say what each does.

/** The service window: the length every kind shares ("24 hours", a "24-hour window"), or each channel type's. */
function serviceWindows(): { within: string; window: string } {
  const lengths = new Set(channelKinds.map((k) => k.capabilities.serviceWindowHours));
  const [shared] = lengths;
  if (lengths.size === 1 && shared !== null) return { within: windowLength(shared), window: `${shared}-hour window` };
  const each = channelKinds.map((k) => {
    const hours = k.capabilities.serviceWindowHours;
    return `${k.channelTypes.join(', ')}: ${hours === null ? 'none, free-form always allowed' : windowLength(hours)}`;
  });
  return { within: `the service window of the channel's kind (${each.join('; ')})`, window: 'service window' };
}
const windows = serviceWindows();

/** The channel types whose kinds have a window but no templates: nothing goes outside it. */
const noTemplates =
  channelKinds
    .filter((k) => k.capabilities.serviceWindowHours !== null && !k.capabilities.templates)
    .flatMap((k) => k.channelTypes)
    .join(', ') || 'none';

/** The media types some kind does not send, and what each kind sends; nothing when every kind sends them all. */
function mediaTypes(): string {
  const all = MESSAGE_TYPES.filter((t) => t !== 'text' && t !== 'template');
  if (channelKinds.every((k) => all.every((t) => k.capabilities.mediaKinds.includes(t)))) return '';
  const each = channelKinds.map(
    (k) => `${k.channelTypes.join(', ')}: ${k.capabilities.mediaKinds.join(', ') || 'none'}`,
  );
  return `A media type the channel's kind does not send answers 400 \`validation_error\` (${each.join('; ')}). `;
}

/** The channel types whose kinds only receive, whose sends answer 400; nothing when every kind sends. */
function receiveOnlyTypes(): string {
  const types = channelKinds.filter((k) => k.capabilities.receiveOnly).flatMap((k) => k.channelTypes);
  if (types.length === 0) return '';
  return `A channel that only receives (${types.join(', ')}: phone calls) answers 400 \`channel_receive_only\`. `;
}

/** Public sending: free-form and template sends, and the status of a sent message. */
export const sendingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/messages/send',
    {
      config: { idempotency: 'messages.send' },
      schema: {
        tags,
        security,
        summary: 'Send a message to a contact through a channel',
        description:
          'Accepted sends are stored (message status PENDING) and queued in one transaction, then delivered by a worker at ' +
          "the channel's pace (pace_per_second, default 80/s, kept per server process) retrying throughput, pair-rate and service " +
          'errors with exponential backoff (up to 10 attempts); final provider errors mark the message failed with the detail. ' +
          'The answer is 200 with status `enqueued`. ' +
          'The recipient contact is found by phone (country variants included) or created. Types: text (`content.text`), ' +
          'image, audio, video, document, sticker (`content.url`; `caption` for image, video, document; `filename` for document) ' +
          'and template (`template_uuid`, `template_values` filling its variables in order, `content: {}`). ' +
          mediaTypes() +
          'A send with `template_uuid` is a template send with type `template` or `text`; its `content` may carry `text`, ' +
          'which is ignored: the message delivered and stored (type template) is the template filled with `template_values`. ' +
          `Free-form messages need an inbound message of the contact on this channel within ${windows.within} (else 400 \`template_required\`, or \`window_closed\` on a kind without templates: ${noTemplates}). ` +
          'A contact who opted out (collected_data.opted_out, or collected_data.<channel>_opted_out, set when the provider ' +
          'reports that the recipient unsubscribed, as an SMS recipient does by replying STOP) is refused with 400 `blocked` ' +
          'unless `optin_contact: true`, which records the opt-in on the contact (collected_data.<channel>_opt_in and ' +
          "_opt_in_at, and clears <channel>_opted_out). A text (or caption) the channel's provider would refuse, such as " +
          'an SMS over 1600 characters, answers 400 `text_too_long`. ' +
          receiveOnlyTypes() +
          '`assigned_user` (a user email) and `team_uuid` ' +
          'assign the conversation; unknown ones answer 400. `bot_status: bot_end` sets manual control (event manual_control_activated), ' +
          '`bot_start` releases it (manual_control_released, and manual_control_unlocked first when it was pinned); nothing is written ' +
          'when it does not change. `fields=contact,conversation` ' +
          'adds the contact (camelCase form) and the conversation to the answer. A channel_uuid or template_uuid of another business: 404. ' +
          'Honours Idempotency-Key.',
        body: SendBody,
        response: responses({ 200: SendResponse }, 400, 401, 404, 409, 422),
      },
    },
    async (request) => app.services.sending.send(request.businessId, request.body, idempotencyClaimOf(request)),
  );

  app.get(
    '/messages/status/:uuid',
    {
      schema: {
        tags,
        security,
        summary: 'Delivery status of a message sent through the API',
        description:
          'status: `enqueued` while queued, then `sent` (accepted by the provider), `delivered`, `read`, or `failed` (with `error`). ' +
          "A send whose attempt failed stays `enqueued` while it is retried, with the attempt's `error` and the `attempts` so far; " +
          'a send whose outcome cannot be known (the service stopped, or the connection dropped, while the provider may have had ' +
          'it) is `failed` with an error starting `outcome unknown`, and never sent again. ' +
          "payload.type is `template` for template messages, else `session`; whatsappMessageId is the provider's id (null until sent). " +
          '404 for an unknown message, an inbound one, or one of another business.',
        params: UuidParams,
        response: responses({ 200: MessageStatusResponse }, 400, 401, 404),
      },
    },
    async (request) => app.services.sending.status(request.businessId, request.params.uuid),
  );

  app.post(
    '/send-template',
    {
      config: { idempotency: 'send-template' },
      schema: {
        tags,
        security,
        summary: 'Send a template message',
        description:
          "Body fields fill the template's variables (numeric keys positional, named keys named; other fields are ignored); " +
          '`buttons` give the values of URL buttons with a `{{1}}`. A template, number or agent that is unknown or of another ' +
          'business answers 403 `forbidden`. A missing variable or button value (400 `template_variable_missing`), or a contact who ' +
          'opted out (400 `blocked`), refuses the send; so does a named variable `phone`, `buttons` or `__proto__`, which this body cannot carry ' +
          '(POST /messages/send fills those by position). `agent_id` assigns the agent to the conversation (events agent_assigned or ' +
          `agent_switched). No ${windows.window} applies. Delivered like POST /messages/send; honours Idempotency-Key.`,
        querystring: SendTemplateQuery,
        body: SendTemplateBody,
        response: responses({ 200: SendTemplateResponse }, 400, 401, 403, 409, 422),
      },
    },
    async (request) =>
      app.services.sending.sendTemplate(request.businessId, request.query, request.body, idempotencyClaimOf(request)),
  );
};
