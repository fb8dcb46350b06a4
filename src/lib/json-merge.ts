import deepmerge from 'deepmerge';

export type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The value without its null members, at every depth (arrays keep their nulls: they are values, not
 * absent fields). For partial updates whose contract reads a null as "not sent". Hand-written: no
 * JSON library drops nulls without also taking other choices (undefined, empty objects) with them.
 */
export function withoutNulls<T>(value: T): T {
  if (!isObject(value)) return value;
  const kept: JsonObject = {};
  for (const [key, member] of Object.entries(value)) {
    if (member !== null) kept[key] = withoutNulls(member);
  }
  return kept as T;
}

/**
 * `patch` merged into `current`: objects merge member by member at every depth; anything else in
 * the patch (a string, a number, an array) replaces what was there. As RFC 7396 (JSON Merge Patch)
 * with nulls already dropped (withoutNulls). deepmerge skips `__proto__` and `constructor` keys.
 */
export function mergeJson(current: JsonObject, patch: JsonObject): JsonObject {
  return deepmerge<JsonObject>(current, patch, { arrayMerge: (_target, source) => source, isMergeableObject: isObject });
}
