/**
 * Canonical JSON, the one text both idempotency paths hash for their second digest (the
 * `"c"` field of a record, src/redis/idempotency-lua.ts SAME_REQUEST_LUA): the service's
 * `Idempotency-Key` middleware (functions/middleware/idempotency.ts) and the library's
 * `idempotencyKey` (src/library/shared.ts). Here, in src/, because the published library
 * cannot import functions/; one implementation, so "the same JSON" means the same on both.
 */

/**
 * A parsed JSON value as canonical JSON: object keys sorted (by UTF-16 code units, as `sort()`
 * does), no whitespace, every string and number as JSON.stringify writes it; so two texts of the
 * same JSON (key order, spaces, escapes, `1.0` for `1`) give the same text. Takes what
 * JSON.parse returns (no `undefined`, functions or `toJSON`); depth is the caller's to bound.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const object = value as Record<string, unknown>;
    const fields = Object.keys(object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(object[k])}`);
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value);
}
