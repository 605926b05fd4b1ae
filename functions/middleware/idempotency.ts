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

/** `value` with every object's keys in code-unit order, so JSON.stringify writes one text for it. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) out[k] = sorted((value as Record<string, unknown>)[k]);
  return out;
}

/**
 * The request as canonical JSON (keys sorted, no whitespace, numbers as JSON writes them): a retry
 * that serializes the same request another way (key order, spaces, `5.0`) is the same request. The
 * raw bytes made it a 409 synchronously and, queued, a second request applied twice (found by the
 * queues end-to-end test). An empty body is `{}`, as the routes read it; text that is not JSON
 * stays as it is (the route refuses it). Only keyed writes pay the second parse.
 */
function canonical(body: string): string {
  if (body === "") return "{}";
  try {
    return JSON.stringify(sorted(JSON.parse(body)));
  } catch {
    return body;
  }
}

/**
 * Reads `Idempotency-Key` on writes. The record's Redis key is a SHA-256 of the
 * caller's key id (itself a digest of the API key, never the key), the method,
 * the path and the header, so two API keys sending the same Idempotency-Key
 * never see or block each other's records; its fingerprint is a SHA-256 of the
 * body as canonical JSON, so the same key with a different body is a 409 rather than a silent
 * replay of something else.
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
    fingerprint: await sha256(canonical(body)),
  };
  c.set("idempotency", idempotency);
  await next();
});
