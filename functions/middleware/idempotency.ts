import type { Context } from "hono";
import { createMiddleware } from "./define.ts";
import { ValidationError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import { canonicalJson } from "../../src/redis/canonical-json.ts";
import type { Idempotency } from "../../src/redis/script.ts";
import type { AppEnv } from "../types.ts";

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The methods whose Idempotency-Key is read (`idempotencyKey`): every one but GET and DELETE. */
export function readsIdempotencyKey(method: string): boolean {
  return method !== "GET" && method !== "DELETE";
}

/**
 * 400 unless `header` is an Idempotency-Key's form. Called by ./request.ts `headerGuard`, before
 * the rate limiter's Redis call (review 17), and by `idempotencyOf` below.
 */
export function checkIdempotencyKey(header: string): void {
  if (!IDEMPOTENCY_KEY.test(header)) {
    throw new ValidationError("Idempotency-Key must be 1-255 visible ASCII characters.", [
      { path: "Idempotency-Key", message: "1-255 visible ASCII characters" },
    ]);
  }
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// The body as canonical JSON (sorted keys, no whitespace): shared with the library's idempotencyKey,
// so both mean the same by "the same JSON". Re-exported for the tests that pin it.
export { canonicalJson };

/** SHA-256 of the body's canonical JSON; undefined for an empty body (a route may allow one), which its bytes alone identify. */
async function canonicalDigest(body: string, parsed: unknown): Promise<string | undefined> {
  if (body.length === 0) return undefined;
  try {
    return await sha256(canonicalJson(parsed !== undefined ? parsed : JSON.parse(body)));
  } catch {
    // (the body guard refused malformed JSON before this runs; were one to come here, its bytes identify it)
    return undefined;
  }
}

/**
 * Reads `Idempotency-Key` on writes. The record's Redis key is a SHA-256 of the
 * caller's key id (itself a digest of the API key, never the key), the method,
 * the path and the header, so two API keys sending the same Idempotency-Key
 * never see or block each other's records. The request is identified by two digests of its body:
 * `fingerprint`, the SHA-256 of its bytes (what every version has hashed: the record's first line
 * and the queued message's dedupe id, unchanged, so a retry served by the previous release across
 * a deploy is still the same request), and `canonical`, the SHA-256 of its canonical JSON, kept
 * beside it. A request matches a record when either digest does (src/redis/idempotency-lua.ts
 * SAME_REQUEST_LUA), so a retry that re-serializes the same JSON (key order, whitespace) is a
 * replay, as Stripe compares parameters, and the same key with a different body is a 409 rather
 * than a silent replay of something else. (Hashing canonical JSON instead of the bytes made every
 * retry in flight across that deploy another request: review 9.)
 */
export const idempotencyKey = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("idempotency-key");
  if (header === undefined || !readsIdempotencyKey(c.req.method)) {
    c.set("idempotency", undefined);
    return next();
  }
  c.set("idempotency", await idempotencyOf(c, header));
  await next();
});

/**
 * The record of a write that sent `Idempotency-Key: header`. A function of its own: a write
 * without the header (a cold isolate's first write, most often) does not compile it (issue 14,
 * point 6).
 */
async function idempotencyOf(c: Context<AppEnv>, header: string): Promise<Idempotency> {
  checkIdempotencyKey(header);
  // The path as the router matched it (percent escapes of names decoded, no trailing slash), so
  // another spelling of the same route and names is the same record, not a second write.
  const scope = `${c.req.method} ${c.req.path.replace(/\/+$/, "")}`;
  // The body as the body guard (./body.ts) read it, from Hono's cache.
  const body = await c.req.text();
  return {
    key: keyOf(c.get("config").keyPrefix, "idem", await sha256(`${await c.get("keyId")()}\n${scope}\n${header}`)),
    fingerprint: await sha256(body),
    canonical: await canonicalDigest(body, c.var.body), // the body guard's parse
  };
}
