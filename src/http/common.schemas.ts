import { Type, type Static, type TSchema } from 'typebox';

/**
 * One of the strings of `values`: a union of literals, typed as the union of the strings (TypeBox
 * types a union built from a mapped array as never).
 */
export function OneOf<const T extends readonly string[]>(values: T, options: { description?: string } = {}) {
  return Type.Unsafe<T[number]>(
    Type.Union(
      values.map((v) => Type.Literal(v)),
      options,
    ),
  );
}

export const Uuid = Type.String({ format: 'uuid', description: 'UUID' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601, UTC, microseconds' });

/**
 * A value of `schema` or null. A schema of one primitive type becomes `type: [type, 'null']`, the
 * rest `anyOf`. Both mean the same to validation and to OpenAPI 3.1, but fast-json-stringify writes
 * a type list after a typeof test, while for `anyOf` it runs an Ajv check of every value (formats
 * included: a date-time pattern per timestamp), about 0.5% of a conversation lookup's CPU.
 */
export function Nullable<T extends TSchema>(schema: T, options: { description?: string } = {}) {
  const { type } = schema as { type?: unknown };
  if (typeof type === 'string' && type !== 'object' && type !== 'array') {
    return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [type, 'null'] });
  }
  return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()], options));
}

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'machine-readable code, e.g. validation_error, not_found' }),
      message: Type.String(),
      details: Type.Optional(
        Type.Array(Type.Unknown(), {
          description:
            'what was refused; for input that fails its schema, {location, path, message} per failure, with `allowed` ' +
            'listing the values of a field that takes one of a fixed set',
        }),
      ),
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
