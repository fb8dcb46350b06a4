import { Type, type Static } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';
import { HEADER_MASK } from './webhook-header-secrets.ts';
import { MAX_HEADERS, RESERVED_HEADERS } from './webhook-headers.ts';

/** Events a webhook can subscribe to. */
export const WebhookEvent = Type.Literal('message_created');

const Url = Type.String({
  minLength: 1,
  maxLength: 2000,
  description:
    'http(s) endpoint without credentials. Its host must resolve only to public addresses (checked at creation and at every attempt) unless the service runs with ALLOW_PRIVATE_WEBHOOK_TARGETS=true.',
});

const Method = Type.Union([Type.Literal('POST'), Type.Literal('PUT')], {
  description: 'HTTP method of the calls; default POST',
});

const HeaderName = Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$" });

const headersDescription = `custom headers sent with every call (at most ${MAX_HEADERS}; names are HTTP tokens; values at most 1000 characters of printable ASCII, with spaces and tabs inside but not at either end, or empty). Refused with 400: ${RESERVED_HEADERS.join(', ')}. Values are stored encrypted and every answer shows them masked: \`${HEADER_MASK}\` and the value's last 4 characters (\`${HEADER_MASK}\` alone for a value of 4 characters or fewer). A masked value sent back as it was read keeps the stored value`;

const Headers = Type.Record(
  HeaderName,
  // What a header carries as it is: printable ASCII, spaces and tabs inside only (a receiver drops
  // them at the ends, and Node refuses to send characters beyond Latin-1). Or a mask read back,
  // which no such value can be: the mask and the last 4 characters of one.
  Type.String({ maxLength: 1000, pattern: `^(?:(?:[!-~](?:[\\t -~]*[!-~])?)?|${HEADER_MASK}(?:[\\t -~]{3}[!-~])?)$` }),
  {
    maxProperties: MAX_HEADERS,
    additionalProperties: false,
    description: `${headersDescription} (on an edit; on a creation it is refused with 400, as no value is stored yet).`,
  },
);

export const CreateWebhookBody = Type.Object(
  {
    event: WebhookEvent,
    url: Url,
    method: Type.Optional(Method),
    headers: Type.Optional(Headers),
    enabled: Type.Optional(Type.Boolean({ description: 'default true' })),
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    method: Type.Optional(Method),
    headers: Type.Optional(Headers),
    enabled: Type.Optional(Type.Boolean({ description: 're-enabling clears disabled_reason and the failure run' })),
  },
  {
    additionalProperties: false,
    description: `fields sent replace the stored ones; \`headers\` replaces the whole set: a header sent with a value gets that value, one sent with its masked value as read (\`${HEADER_MASK}abcd\`) keeps its stored value, one left out is removed (\`{}\` removes them all)`,
  },
);
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>;

export const Webhook = Type.Object({
  id: Uuid,
  event: Type.String(),
  url: Type.String(),
  method: Type.String(),
  headers: Type.Record(Type.String(), Type.String(), {
    description: `${headersDescription}.`,
  }),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(
    Type.String({
      description: 'why the service disabled it: endpoint_gone (HTTP 410), failing_5_days, or disabled_by_operator',
    }),
  ),
  disabled_at: Nullable(Timestamp),
  failing_since: Nullable(Timestamp),
  last_success_at: Nullable(Timestamp),
  previous_secret_expires_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookForm = Static<typeof Webhook>;

export const WebhookWithSecret = Type.Object({
  webhook: Webhook,
  secret: Type.String({ description: 'whsec_<base64>: the signing secret, shown only in this answer' }),
});

export const WebhookItemParams = Type.Object({ bid: Uuid, id: Uuid }, { additionalProperties: false });
export const DeliveryParams = Type.Object({ bid: Uuid, id: Uuid, deliveryId: Uuid }, { additionalProperties: false });

/** A webhook of the session's business (the dashboard's paths carry no business). */
export const SessionWebhookParams = Type.Object({ id: Uuid }, { additionalProperties: false });
export const SessionDeliveryParams = Type.Object({ id: Uuid, deliveryId: Uuid }, { additionalProperties: false });

export const DeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 200, default: 50, description: 'attempts per page; default 50, max 200' }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page' })),
  },
  { additionalProperties: false },
);

export const DeliveryAttempt = Type.Object({
  id: Type.String({ description: 'the delivery: also its webhook-id header, the same on every attempt' }),
  message_id: Nullable(Uuid),
  attempt: Type.Integer({ description: '1 for the first attempt of the delivery' }),
  status_code: Nullable(Type.Integer()),
  ok: Type.Boolean(),
  error: Nullable(Type.String()),
  duration_ms: Type.Integer(),
  response_body: Nullable(Type.String({ description: 'the first 1 KB of the answer' })),
  next_attempt_at: Nullable(Timestamp, {
    description:
      "when the delivery is tried again after this attempt: set on the delivery's latest attempt while a retry is pending, else null",
  }),
  created_at: Timestamp,
});
export type DeliveryAttemptForm = Static<typeof DeliveryAttempt>;

export const DeliveriesPage = Type.Object({
  deliveries: Type.Array(DeliveryAttempt),
  next_cursor: Nullable(Type.String()),
});

export const Delivery = Type.Object({
  id: Type.String(),
  message_id: Nullable(Uuid),
  state: Type.String({ description: 'pending, running, delivered or failed' }),
  attempts: Type.Integer(),
  next_attempt_at: Timestamp,
  last_error: Nullable(Type.String()),
  created_at: Timestamp,
});
export type DeliveryForm = Static<typeof Delivery>;
