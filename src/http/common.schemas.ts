import { Type, type TSchema } from 'typebox';

export const Uuid = Type.String({ format: 'uuid', description: 'UUID' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601, UTC, microseconds' });

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'machine-readable code, e.g. validation_error, not_found' }),
      message: Type.String(),
      details: Type.Optional(Type.Array(Type.Unknown())),
    }),
  },
  { $id: 'ErrorBody', description: 'Every 4xx and 5xx answer carries this body' },
);

const errorRef = Type.Unsafe<{ error: { code: string; message: string; details?: unknown[] } }>(Type.Ref('ErrorBody'));

/** Response map for a route: its success schemas plus the error statuses it can answer. */
export function responses<T extends Record<number, TSchema>>(success: T, ...errorStatuses: number[]) {
  const map: Record<number, TSchema> = { ...success };
  for (const status of errorStatuses) map[status] = errorRef;
  return map as T & Record<number, TSchema>;
}

export const UuidParams = Type.Object({ uuid: Uuid }, { additionalProperties: false });
