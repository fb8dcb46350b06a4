import { Type, type Static } from 'typebox';
import { Nullable } from '../../http/common.schemas.ts';
import { EventRecord, MessageExport } from '../exports/exports.schemas.ts';

export const TIMELINE_LIMIT_DEFAULT = 50;
export const TIMELINE_LIMIT_MAX = 200;

export const TimelineQuery = Type.Object(
  {
    limit: Type.Integer({
      minimum: 1,
      maximum: TIMELINE_LIMIT_MAX,
      default: TIMELINE_LIMIT_DEFAULT,
      description: 'items per page; default 50, max 200',
    }),
    cursor: Type.Optional(Type.String({ maxLength: 1000, description: 'next_cursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type TimelineQuery = Static<typeof TimelineQuery>;

export const TimelineMessage = Type.Object({ kind: Type.Literal('message'), ...MessageExport.properties });
export const TimelineEvent = Type.Object({ kind: Type.Literal('event'), ...EventRecord.properties });
export type TimelineItem = Static<typeof TimelineMessage> | Static<typeof TimelineEvent>;

export const TimelinePage = Type.Object({
  items: Type.Array(Type.Union([TimelineMessage, TimelineEvent]), {
    description: 'newest first, ordered by (created_at, id)',
  }),
  next_cursor: Nullable(Type.String(), { description: "null only when the contact's history is done" }),
});
