import { createMiddleware } from "hono/factory";
import { ForbiddenError, UnauthorizedError } from "../../src/errors.ts";
import type { AppEnv, Scope } from "../types.ts";

const encoder = new TextEncoder();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** Compares two 32-byte digests without an early exit, so timing says nothing about the key. */
function sameDigest(a: Uint8Array, b: Uint8Array): boolean {
  let diff = 0;
  for (let i = 0; i < 32; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

function keysOf(list: string | undefined): string[] {
  return (list ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k.length > 0);
}

const digestCache = new Map<string, Promise<Uint8Array[]>>();
function digestsOf(list: string | undefined): Promise<Uint8Array[]> {
  const raw = list ?? "";
  let digests = digestCache.get(raw);
  if (!digests) {
    digests = Promise.all(keysOf(raw).map(sha256));
    digestCache.set(raw, digests);
  }
  return digests;
}

/**
 * Works out which scopes the bearer key holds. Every configured key is
 * compared (constant time per key, no early exit), so the response time does
 * not reveal which list matched or how much of a key was right.
 */
export async function scopesOf(env: Env, authorization: string | undefined): Promise<{ scopes: Set<Scope>; keyId: string } | null> {
  const match = /^Bearer\s+(\S{1,512})$/i.exec(authorization ?? "");
  if (!match?.[1]) return null;
  const presented = await sha256(match[1]);
  const scopes = new Set<Scope>();
  const lists: [Scope, string | undefined][] = [
    ["admin", env.ADMIN_KEYS],
    ["ingest", env.INGEST_KEYS],
    ["read", env.READ_KEYS],
  ];
  for (const [scope, list] of lists) {
    for (const digest of await digestsOf(list)) if (sameDigest(presented, digest)) scopes.add(scope);
  }
  if (scopes.size === 0) return null;
  if (scopes.has("admin")) scopes.add("ingest").add("read");
  const keyId = [...presented.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return { scopes, keyId };
}

const NEEDS: Record<Scope, string> = {
  read: "a read key (READ_KEYS) or an admin key",
  ingest: "an ingest key (INGEST_KEYS) or an admin key",
  admin: "an admin key (ADMIN_KEYS)",
};

/** Authenticates the request and requires `scope`; by default GETs need read, other methods ingest. */
export function requireScope(scope?: Scope) {
  return createMiddleware<AppEnv>(async (c, next) => {
    let scopes = c.get("scopes");
    if (!scopes) {
      const found = await scopesOf(c.env, c.req.header("authorization"));
      if (!found) throw new UnauthorizedError();
      scopes = found.scopes;
      c.set("scopes", scopes);
      c.set("keyId", found.keyId);
    }
    const needed = scope ?? (c.req.method === "GET" || c.req.method === "HEAD" ? "read" : "ingest");
    if (!scopes.has(needed)) throw new ForbiddenError(`This endpoint needs ${NEEDS[needed]}.`);
    await next();
  });
}
