import { createMiddleware } from "./define.ts";
import { ValidationError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import type { Idempotency } from "../../src/redis/script.ts";
import type { AppEnv } from "../types.ts";

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Reads `Idempotency-Key` on writes. The record's Redis key is a SHA-256 of the
 * caller's key id (itself a digest of the API key, never the key), the method,
 * the path and the header, so two API keys sending the same Idempotency-Key
 * never see or block each other's records; its fingerprint is a SHA-256 of the
 * body's bytes, so the same key with a different body is a 409 rather than a silent replay of
 * something else. The bytes, not canonical JSON: a change of what is hashed would make every retry
 * in flight across the deploy another request (409 synchronously, applied twice when queued: review
 * 9 measured it), so a retry must resend the same bytes, as every client that keeps its request does.
 */
export const idempotencyKey = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("idempotency-key");
  if (header === undefined || c.req.method === "GET" || c.req.method === "DELETE") {
    c.set("idempotency", undefined);
    return next();
  }
  if (!IDEMPOTENCY_KEY.test(header)) {
    throw new ValidationError("Idempotency-Key must be 1-255 visible ASCII characters.", [
      { path: "Idempotency-Key", message: "1-255 visible ASCII characters" },
    ]);
  }
  // The path as the router matched it (percent escapes of names decoded, no trailing slash), so
  // another spelling of the same route and names is the same record, not a second write.
  const scope = `${c.req.method} ${c.req.path.replace(/\/+$/, "")}`;
  // The body as the body guard (./body.ts) read it, from Hono's cache.
  const body = await c.req.text();
  const idempotency: Idempotency = {
    key: keyOf(c.get("config").keyPrefix, "idem", await sha256(`${await c.get("keyId")()}\n${scope}\n${header}`)),
    fingerprint: await sha256(body),
  };
  c.set("idempotency", idempotency);
  await next();
});
