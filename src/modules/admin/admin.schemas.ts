import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/common.schemas.ts';

export const BusinessParams = Type.Object({ bid: Uuid }, { additionalProperties: false });
export const BusinessItemParams = Type.Object({ bid: Uuid, id: Uuid }, { additionalProperties: false });

export const CreateBusinessBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
const AI_DAILY_TOKEN_BUDGET =
  "tokens (in and out) the business's AI agents may use per UTC day, replies, follow-ups and sentiments together; past it a reply hands the conversation to a person. null: the service's AI_DAILY_TOKEN_BUDGET; 0: no bound";

const TIME_ZONE =
  "IANA name of the zone the business's reports count days and hours in (default UTC), e.g. Europe/Paris";

export const Business = Type.Object({
  id: Uuid,
  name: Type.String(),
  ai_daily_token_budget: Nullable(Type.Integer(), { description: AI_DAILY_TOKEN_BUDGET }),
  time_zone: Type.String({ description: TIME_ZONE }),
  created_at: Timestamp,
});

/** The body of PATCH /admin/v1/businesses/:bid: the fields to change. */
export const UpdateBusinessBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    ai_daily_token_budget: Type.Optional(
      Nullable(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), { description: AI_DAILY_TOKEN_BUDGET }),
    ),
    time_zone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: TIME_ZONE })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const CreateApiKeyBody = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })) },
  { additionalProperties: false },
);
export const ApiKey = Type.Object({
  id: Uuid,
  name: Type.String(),
  prefix: Type.String({ description: 'first characters of the key, to recognise it' }),
  created_at: Timestamp,
  revoked_at: Type.Optional(Nullable(Timestamp)),
  last_used_at: Type.Optional(
    Nullable(Timestamp, { description: 'when a request last used it, to the minute; null when never' }),
  ),
});

/** Operator lists are bounded: `limit` records, oldest first. */
export const ListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'records to return; default 100, max 500' }),
    ),
  },
  { additionalProperties: false },
);

export const ListBusinessesQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'records to return; default 100, max 500' }),
    ),
    after: Type.Optional(
      Type.String({ format: 'uuid', description: 'the `next_after` of the previous page: businesses after this one' }),
    ),
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'only businesses whose name contains this, in any case',
      }),
    ),
  },
  { additionalProperties: false },
);
