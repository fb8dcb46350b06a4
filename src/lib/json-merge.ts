export type JsonObject = Record<string, unknown>;

export const isJsonObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The value without its null members, at every depth, for partial updates whose contract reads a
 * null as "not sent": an object left empty by that is dropped too, so `{"a": {"b": null}}` sends
 * nothing rather than an empty `a`. An object sent empty stays, and arrays keep their nulls (they
 * are values, not absent fields).
 */
export function withoutNulls<T>(value: T): T {
  if (!isJsonObject(value)) return value;
  const kept: [string, unknown][] = [];
  for (const [key, member] of Object.entries(value)) {
    if (member === null) continue;
    const cleaned = withoutNulls(member);
    if (isJsonObject(member) && Object.keys(member).length > 0 && Object.keys(cleaned as JsonObject).length === 0)
      continue;
    kept.push([key, cleaned]);
  }
  // fromEntries defines each key as an own property: a "__proto__" key stays data, never a prototype.
  return Object.fromEntries(kept) as T;
}

/**
 * `patch` merged into `current`: objects merge member by member at every depth; anything else in
 * the patch (a string, a number, an array) replaces what was there. As RFC 7396 (JSON Merge Patch)
 * with nulls already dropped (withoutNulls). Hand-written because deepmerge skips keys that name
 * Object.prototype members ("constructor", "toString", …), which are ordinary keys in JSON.
 */
export function mergeJson(current: JsonObject, patch: JsonObject): JsonObject {
  const merged = new Map(Object.entries(current));
  for (const [key, value] of Object.entries(patch)) {
    const before = merged.get(key);
    merged.set(key, isJsonObject(before) && isJsonObject(value) ? mergeJson(before, value) : value);
  }
  return Object.fromEntries(merged);
}
