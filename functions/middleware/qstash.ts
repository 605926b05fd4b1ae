import { createMiddleware } from "./define.ts";
import { UnauthorizedError } from "../../src/errors.ts";
import type { AppEnv } from "../types.ts";
import { requireScope } from "./auth.ts";
import { readLimited, refuseDeclaredOversize } from "./body.ts";
import { limitRequest } from "./rate-limit.ts";
import { claimSignature, releaseSignature } from "../../src/signed-calls.ts";
import { ctxOf } from "./context.ts";

/** Seconds of clock skew allowed on a QStash signature's `nbf` and `exp`. */
export const QSTASH_CLOCK_TOLERANCE_SECONDS = 30;
/** Longest `Upstash-Signature` header read (QStash's are about 400 characters). */
const MAX_SIGNATURE_LENGTH = 4096;

const encoder = new TextEncoder();

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}

function jsonPart(text: string): Record<string, unknown> | null {
  const bytes = fromBase64url(text);
  if (!bytes) return null;
  try {
    const value: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

const hmacKeys = new Map<string, Promise<CryptoKey>>();
function hmacKey(secret: string): Promise<CryptoKey> {
  let key = hmacKeys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    hmacKeys.set(secret, key);
  }
  return key;
}

/**
 * Checks an `Upstash-Signature` JWT as @upstash/qstash's Receiver does (HS256
 * by the current or the next signing key, issuer `Upstash`, subject = this
 * URL, `nbf`/`exp` now, claim `body` = base64url SHA-256 of the body), with
 * QSTASH_CLOCK_TOLERANCE_SECONDS of skew, in an order that reads the body
 * last: everything but the body hash is settled from the header alone, so an
 * unsigned request never makes the Worker read its body. Returns a reason
 * when it is not valid, else the signature's id (its MAC's bytes in hex: the base64url text has
 * other spellings of the same bytes, which a replay could use) and when it expires.
 */
export async function verifyQstashSignature(
  signature: string,
  keys: { current: string; next: string },
  url: string,
  readBody: () => Promise<string>,
  nowMs = Date.now(),
): Promise<string | { id: string; expiresAtMs: number }> {
  if (signature.length > MAX_SIGNATURE_LENGTH) return "too long";
  const parts = signature.split(".");
  if (parts.length !== 3) return "not a JWT";
  const [headerPart = "", claimsPart = "", macPart = ""] = parts;
  const header = jsonPart(headerPart);
  const claims = jsonPart(claimsPart);
  const mac = fromBase64url(macPart);
  if (!header || !claims || !mac) return "not a JWT";
  if (header.alg !== "HS256") return "not HS256";
  const signed = encoder.encode(`${headerPart}.${claimsPart}`);
  let valid = false;
  for (const secret of [keys.current, keys.next]) {
    if (await crypto.subtle.verify("HMAC", await hmacKey(secret), mac, signed)) {
      valid = true;
      break;
    }
  }
  if (!valid) return "bad signature";
  const now = nowMs / 1000;
  if (claims.iss !== "Upstash") return "wrong issuer";
  if (claims.sub !== url) return "wrong URL";
  if (typeof claims.exp !== "number" || claims.exp + QSTASH_CLOCK_TOLERANCE_SECONDS <= now) return "expired";
  if (claims.nbf !== undefined && (typeof claims.nbf !== "number" || claims.nbf - QSTASH_CLOCK_TOLERANCE_SECONDS > now))
    return "not yet valid";
  if (typeof claims.body !== "string") return "no body hash";
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(await readBody())));
  if (claims.body.replace(/=+$/, "") !== base64url(hash)) return "body hash mismatch";
  return {
    id: [...mac].map((b) => b.toString(16).padStart(2, "0")).join(""),
    expiresAtMs: (claims.exp + QSTASH_CLOCK_TOLERANCE_SECONDS) * 1000,
  };
}

/**
 * `/internal/*`: QStash schedules call with an `Upstash-Signature` JWT;
 * operators may call with an admin key instead. A signature, when present,
 * must be valid: it is never ignored in favour of another credential. Runs
 * before the body guard, so nothing reads a body before its sender is known.
 * An admin key's call counts against its rate limit as a /v1 request does (a key over its limit
 * started jobs back to back: review 17), after the refusal its headers alone decide. A signed call
 * runs once: a replay of its signature is answered as one (`Idempotent-Replayed: true`) and runs
 * nothing (src/signed-calls.ts; replays ran the job again, never limited, until the signature
 * expired: review 20).
 */
export const signedOrAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const signature = c.req.header("upstash-signature");
  if (signature === undefined)
    return requireScope("admin")(c, async () => {
      refuseDeclaredOversize(c.req.method, c.req.header("content-length"));
      await limitRequest(c);
      await next();
    });
  const { QSTASH_CURRENT_SIGNING_KEY: current, QSTASH_NEXT_SIGNING_KEY: nextKey } = c.env;
  if (!current || !nextKey)
    throw new UnauthorizedError("QStash signing keys are not configured here; call with an admin key.");
  const verified = await verifyQstashSignature(signature, { current, next: nextKey }, c.req.url, () =>
    readLimited(c.req.raw.clone()),
  );
  if (typeof verified === "string")
    throw new UnauthorizedError(`The Upstash-Signature is not valid for this URL and body (${verified}).`);
  const { redis, prefix } = ctxOf(c);
  // A signature that came before is answered, but runs nothing (../routes/jobs.ts): a 2xx, as QStash
  // takes a delivery it may have sent twice to have arrived.
  if (!(await claimSignature(redis, prefix, verified.id, verified.expiresAtMs - Date.now())))
    c.set("signatureReplayed", true);
  await next();
  // a run that failed gives its claim back: QStash retries it, maybe with the same signature
  if (c.res.status >= 500 && !c.get("signatureReplayed")) await releaseSignature(redis, prefix, verified.id);
});
