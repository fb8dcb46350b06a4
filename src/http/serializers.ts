import type { FastifyServerOptions } from 'fastify';
import fastJsonStringify from 'fast-json-stringify';

type SerializerFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']
>;

/** Compiled serializers by the shared schemas and options they were built with, then by response schema. */
const pools = new Map<string, WeakMap<object, (data: unknown) => string>>();

/**
 * Fastify's serializer compiler (fast-json-stringify, as its default one), keeping what it compiled
 * for the process: the response schemas are module constants, so an app built again (a restart in
 * a test, say) reuses each route's serializer instead of generating and compiling its code anew.
 */
export const sharedSerializers: SerializerFactory = (externalSchemas, serializerOptions) => {
  const key = JSON.stringify([externalSchemas, serializerOptions]);
  let pool = pools.get(key);
  if (!pool) pools.set(key, (pool = new WeakMap()));
  const options = { ...serializerOptions, schema: externalSchemas as Record<string, fastJsonStringify.Schema> };
  return ({ schema }) => {
    let serializer = pool.get(schema as object);
    if (!serializer) {
      serializer = fastJsonStringify(schema as fastJsonStringify.Schema, options);
      pool.set(schema as object, serializer);
    }
    return serializer;
  };
};
