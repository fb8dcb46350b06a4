import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';

/**
 * The runs and seed of a generated-input test: `defaultRuns` and a fixed seed, or FUZZ_RUNS and
 * FUZZ_SEED for a longer or different search (docs/TESTING.md#generated-input-tests). The PostgreSQL
 * project replays the first half of the same cases: the inputs explore the API, which is one on both
 * engines, and half of them is enough to hold the server engine to what the embedded one does.
 */
export function fuzzOptions(defaultRuns: number, { halfOnPostgres = true } = {}): { numRuns: number; seed: number } {
  const runs = halfOnPostgres && process.env.TEST_ENGINE === 'postgres' ? Math.ceil(defaultRuns / 2) : defaultRuns;
  return { numRuns: Number(process.env.FUZZ_RUNS ?? runs), seed: Number(process.env.FUZZ_SEED ?? 20261126) };
}

/**
 * An arbitrary `times` over, for a list of commands (fc.commands has no weights: a command listed
 * twice is drawn twice as often).
 */
export const weighted = <T>(times: number, arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T>[] =>
  Array<fc.Arbitrary<T>>(times).fill(arbitrary);

/** The part of an OpenAPI 3.1 document the generated-input tests read. */
export interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: JsonSchema }[];
        requestBody?: { content: Record<string, { schema: JsonSchema }> };
        responses?: Record<string, { content?: Record<string, unknown> }>;
      }
    >
  >;
  components?: { schemas?: Record<string, JsonSchema> };
}

/** The app's OpenAPI document (`GET /openapi.json`), and the resolver of its `$ref`s. */
export async function openApiDocument(
  app: FastifyInstance,
): Promise<{ doc: OpenApiDocument; resolve: (ref: string) => JsonSchema }> {
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<OpenApiDocument>();
  const resolve = (ref: string) => {
    const schema = doc.components?.schemas?.[ref.replace('#/components/schemas/', '')];
    if (!schema) throw new Error(`unresolved ${ref}`);
    return schema;
  };
  return { doc, resolve };
}

/** The part of a JSON Schema (as the OpenAPI document writes it) the generator reads. */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
}

export interface GeneratorContext {
  /** Resolves a `$ref` of the document. */
  resolve(ref: string): JsonSchema;
  /** Ids worth trying wherever a uuid goes: the business's own, another business's, unknown ones. */
  ids: string[];
  /**
   * Values the schema allows only (so the request reaches the service's own rules and the
   * database), or also values past its bounds, of the wrong type, and unknown keys.
   */
  wild: boolean;
  /** Values that mean something to the service, by property or parameter name (a phone number for `phone`). */
  hints?: Record<string, fc.Arbitrary<unknown>>;
}

/** JSON without numbers too small or too large for the service (which refuses those with 400). */
export const plainJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string({ maxLength: 12 }),
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(
      fc.string({ minLength: 1, maxLength: 8 }).filter((k) => k !== '__proto__' && k !== 'constructor'),
      tie('value'),
      { maxKeys: 3 },
    ),
  ),
})).value;

/** Values of no particular type, for a value of the wrong type. */
const wrongTyped = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 }),
);

/** Strings that have broken services before: empty, blank, NUL, surrogates, markup, SQL, very long. */
export const awkwardStrings = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '😀',
  '\u202e',
  '<script>',
  "' or 1=1 --",
  '%00',
  '../../etc/passwd',
  'x'.repeat(10_001),
  '0',
  '-1',
  '1e309',
  'null',
  'true',
  '[]',
  '{}',
);

function stringArbitrary(schema: JsonSchema, ctx: GeneratorContext): fc.Arbitrary<unknown> {
  const max = schema.maxLength ?? 40;
  const bounded = fc.string({ minLength: schema.minLength ?? 0, maxLength: max });
  const byFormat: Record<string, fc.Arbitrary<string>> = {
    uuid: fc.oneof(fc.constantFrom(...ctx.ids), fc.uuid()),
    email: fc.emailAddress(),
    'date-time': fc
      .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
      .map((d) => d.toISOString()),
    uri: fc.webUrl(),
  };
  const allowed =
    (schema.format ? byFormat[schema.format] : undefined) ??
    (schema.pattern
      ? fc
          .stringMatching(new RegExp(schema.pattern))
          .filter((v) => v.length <= max && v.length >= (schema.minLength ?? 0))
      : bounded);
  if (!ctx.wild) return allowed;
  return fc.oneof(
    { weight: 4, arbitrary: allowed },
    { weight: 2, arbitrary: bounded },
    { weight: 1, arbitrary: fc.string({ minLength: max + 1, maxLength: max + 3 }) },
    { weight: 2, arbitrary: awkwardStrings },
  );
}

function numberArbitrary(schema: JsonSchema, integer: boolean, ctx: GeneratorContext): fc.Arbitrary<unknown> {
  const min = schema.minimum ?? (schema.exclusiveMinimum === undefined ? -1000 : schema.exclusiveMinimum + 1);
  const max = schema.maximum ?? (schema.exclusiveMaximum === undefined ? 1000 : schema.exclusiveMaximum - 1);
  const inRange = integer
    ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) })
    : fc.double({ min, max, noNaN: true });
  if (!ctx.wild) return fc.oneof(inRange, fc.constantFrom(min, max));
  const edges = fc.constantFrom(min - 1, max + 1, 0, -1, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, 0.5);
  return fc.oneof({ weight: 3, arbitrary: inRange }, { weight: 2, arbitrary: edges });
}

/**
 * Values for a schema. Tame (`ctx.wild` false): values it allows, at its bounds too, so a request
 * gets past validation to the service's rules and the database. Wild: also past its bounds,
 * awkward strings, unknown keys, and now and then a value of another type altogether. Meant to
 * find the input the schema lets through but the service cannot take.
 */
export function arbitraryFor(schema: JsonSchema, ctx: GeneratorContext, depth = 0): fc.Arbitrary<unknown> {
  if (schema.$ref) return arbitraryFor(ctx.resolve(schema.$ref), ctx, depth);
  const typed = typedArbitrary(schema, ctx, depth);
  return ctx.wild ? fc.oneof({ weight: 9, arbitrary: typed }, { weight: 1, arbitrary: wrongTyped }) : typed;
}

function typedArbitrary(schema: JsonSchema, ctx: GeneratorContext, depth: number): fc.Arbitrary<unknown> {
  if (depth > 4) return wrongTyped;
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives && alternatives.length > 0)
    return fc.oneof(...alternatives.map((s) => arbitraryFor(s, ctx, depth + 1)));
  if (schema.allOf && schema.allOf.length > 0)
    return arbitraryFor(Object.assign({}, ...schema.allOf) as JsonSchema, ctx, depth + 1);
  const types = Array.isArray(schema.type)
    ? schema.type
    : schema.type
      ? [schema.type]
      : schema.properties
        ? ['object']
        : [];
  if (types.length === 0) return ctx.wild ? fc.jsonValue({ maxDepth: 2 }) : plainJson;
  return fc.oneof(...types.map((type) => ofType(type, schema, ctx, depth)));
}

function ofType(type: string, schema: JsonSchema, ctx: GeneratorContext, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string':
      return stringArbitrary(schema, ctx);
    case 'integer':
      return numberArbitrary(schema, true, ctx);
    case 'number':
      return numberArbitrary(schema, false, ctx);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = schema.items ? arbitraryFor(schema.items, ctx, depth + 1) : plainJson;
      const maxLength = Math.min((schema.maxItems ?? 4) + (ctx.wild ? 1 : 0), 8);
      return fc.array(items, { minLength: Math.min(schema.minItems ?? 0, maxLength), maxLength });
    }
    case 'object':
      return objectArbitrary(schema, ctx, depth);
    default:
      return wrongTyped;
  }
}

function objectArbitrary(schema: JsonSchema, ctx: GeneratorContext, depth: number): fc.Arbitrary<unknown> {
  const properties = Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([key, s]) => [key, hinted(key, arbitraryFor(s, ctx, depth + 1), ctx)]),
  );
  const known = fc.record(properties, { requiredKeys: (schema.required ?? []).filter((k) => k in properties) });
  if (!ctx.wild && schema.additionalProperties !== true && typeof schema.additionalProperties !== 'object')
    return known;
  const extraValues =
    typeof schema.additionalProperties === 'object'
      ? arbitraryFor(schema.additionalProperties, ctx, depth + 1)
      : ctx.wild
        ? fc.jsonValue({ maxDepth: 1 })
        : plainJson;
  const extra = fc.dictionary(
    fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', 'id', 'business_id')),
    extraValues,
    { maxKeys: 3 },
  );
  return fc.tuple(known, fc.option(extra, { freq: 3 })).map(([object, more]) => ({ ...(more ?? {}), ...object }));
}

/** The hint for this name when there is one (tame), or it and the schema's values (wild). */
export function hinted(name: string, arbitrary: fc.Arbitrary<unknown>, ctx: GeneratorContext): fc.Arbitrary<unknown> {
  const hint = ctx.hints?.[name];
  if (!hint) return arbitrary;
  return ctx.wild ? fc.oneof(hint, arbitrary) : hint;
}
