import { createMiddleware } from "./define.ts";
import { ConfigError, ForbiddenError, UnauthorizedError } from "../../src/errors.ts";
import type { AppEnv, Scope } from "../types.ts";
import { anyCase } from "./body.ts";

const encoder = new TextEncoder();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/**
 * A configured key list's keys as UTF-16 code units, each padded with zeros to the list's longest
 * key (`width`), so comparing a presented key with each takes as long whatever the keys hold.
 */
interface KeyList {
  width: number;
  keys: Configured[];
}

/**
 * Whether the presented key equals a configured one, in a time that depends on neither key: the
 * lengths and all `width` code units are compared, without an early exit (a presented key shorter
 * than `width` reads as zeros past its end, out of range of a string only it sets; a longer one
 * differs in length). The same loop runs for every request, whatever is presented.
 */
function sameKey(presented: string, configured: Configured, width: number): boolean {
  let diff = presented.length ^ configured.length;
  const units = configured.units;
  for (let i = 0; i < width; i++) diff |= (presented.charCodeAt(i) | 0) ^ (units[i] as number);
  return diff === 0;
}

function keysOf(list: string | undefined): string[] {
  return (list ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k.length > 0);
}

/** Shortest API key accepted in INGEST_KEYS, READ_KEYS and ADMIN_KEYS. */
export const MIN_KEY_LENGTH = 16;
/** Longest key a request may present (`BEARER`): a longer configured key could never match. */
export const MAX_KEY_LENGTH = 512;

/** Why a configured key cannot serve, or null. */
function keyProblem(key: string): string | null {
  if (key.length < MIN_KEY_LENGTH)
    return `is shorter than ${MIN_KEY_LENGTH} characters; use long random keys (e.g. openssl rand -hex 24).`;
  // Such keys were accepted and then refused every request with a 401, which reads as a client's mistake.
  if (key.length > MAX_KEY_LENGTH)
    return `is longer than ${MAX_KEY_LENGTH} characters, the most an Authorization header may present; no request could use it.`;
  if (/\s/.test(key))
    return "contains whitespace, which an Authorization header cannot present; no request could use it.";
  return null;
}

const checkedLists = new Map<string, string | null>();
/**
 * Refuses to run with a configured API key shorter than MIN_KEY_LENGTH (a
 * short key can be guessed) or one no request could present (`keyProblem`). Like every config error this is a 500 with a clear
 * message on every request (and a log line) until the key is replaced. The
 * message names the variable and the key's position, never the key.
 */
export function checkKeyLengths(env: Env): void {
  const lists: [string, string | undefined][] = [
    ["ADMIN_KEYS", env.ADMIN_KEYS],
    ["INGEST_KEYS", env.INGEST_KEYS],
    ["READ_KEYS", env.READ_KEYS],
  ];
  const id = lists.map(([, list]) => list ?? "").join("\u0000");
  let problem = checkedLists.get(id);
  if (problem === undefined) {
    problem = null;
    for (const [name, list] of lists) {
      const keys = keysOf(list);
      const bad = keys.findIndex((key) => keyProblem(key) !== null);
      if (bad >= 0) {
        problem = `${name}: key #${bad + 1} ${keyProblem(keys[bad] ?? "")}`;
        break;
      }
    }
    checkedLists.set(id, problem);
  }
  if (problem) throw new ConfigError(problem);
}

/** A configured key: its code units (zero-padded to its list's width), and its id (made on its first match). */
interface Configured {
  key: string;
  units: Uint16Array;
  length: number;
  id?: string;
}

const keyLists = new Map<string, KeyList>();
function keyListOf(list: string | undefined): KeyList {
  const raw = list ?? "";
  let found = keyLists.get(raw);
  if (!found) {
    const keys = keysOf(raw);
    const width = Math.max(0, ...keys.map((key) => key.length));
    found = {
      width,
      keys: keys.map((key) => {
        const units = new Uint16Array(width);
        for (let i = 0; i < key.length; i++) units[i] = key.charCodeAt(i);
        return { key, units, length: key.length };
      }),
    };
    keyLists.set(raw, found);
  }
  return found;
}

/**
 * The key's id in logs and Redis key names (rate limits, idempotency records): the first 6 bytes
 * of its SHA-256, in hex, never the key. Made when a request first needs it (a rate limit, an
 * Idempotency-Key) and kept per configured key and isolate. The id is kept, not the promise of
 * it: a request never awaits a digest another request started (../first-use.ts says why).
 */
async function idOf(configured: Configured): Promise<string> {
  if (configured.id !== undefined) return configured.id;
  const digest = await sha256(configured.key);
  return (configured.id ??= [...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join(""));
}

/** `Bearer <key>`, the scheme in any case (./body.ts `anyCase`). */
const BEARER = new RegExp(`^${anyCase("bearer")}\\s+(\\S{1,${MAX_KEY_LENGTH}})$`);

/**
 * Works out which scopes the bearer key holds. Every configured key is
 * compared (in constant time per key, no early exit: `sameKey`), so the
 * response time does not reveal which list matched or how much of a key was
 * right.
 */
export async function scopesOf(
  env: Env,
  authorization: string | undefined,
): Promise<{ scopes: Set<Scope>; keyId: () => Promise<string> } | null> {
  const match = BEARER.exec(authorization ?? "");
  if (!match?.[1]) return null;
  const presented = match[1];
  const scopes = new Set<Scope>();
  let matched: Configured | undefined;
  const lists: [Scope, string | undefined][] = [
    ["admin", env.ADMIN_KEYS],
    ["ingest", env.INGEST_KEYS],
    ["read", env.READ_KEYS],
  ];
  for (const [scope, list] of lists) {
    const { width, keys } = keyListOf(list);
    for (const configured of keys) {
      if (sameKey(presented, configured, width)) {
        scopes.add(scope);
        matched = configured;
      }
    }
  }
  if (!matched) return null;
  if (scopes.has("admin")) scopes.add("ingest").add("read");
  const key = matched;
  return { scopes, keyId: () => idOf(key) };
}

/** Header the dashboard's script sends on every API request (value `dashboard`). */
export const DASHBOARD_HEADER = "x-edgestats-client";
export const DASHBOARD_ADMIN_REFUSED =
  "The dashboard takes read keys only: it keeps the key in this browser's localStorage, where a key that can write (ingest or admin scope) could be used to change or delete data. Use a key that is only in READ_KEYS.";

const NEEDS: Record<Scope, string> = {
  read: "a read key (READ_KEYS) or an admin key",
  ingest: "an ingest key (INGEST_KEYS) or an admin key",
  admin: "an admin key (ADMIN_KEYS)",
};

/**
 * POSTs that only read: their body is a query too long for a URL (a leaderboard
 * subset ranking). The default scope of these is read, like a GET. The router also takes the path
 * with a trailing slash, so the pattern does too (else `…/rank/` needed an ingest key, and let one read).
 */
const READ_POSTS = [/^\/v1\/leaderboards\/[^/]+\/rank\/?$/];

/**
 * The admin-only routes, known here as well as by each route's own `requireScope("admin")`: the
 * check of /v1/* then refuses an ingest or read key before the body is read and before the rate
 * limiter's Redis call (a route's own middleware runs after both). test/worker/review-scopes.test.ts
 * holds this table to every route's scope.
 */
const ADMIN_ROUTES: readonly (readonly [string, RegExp])[] = [
  ["DELETE", /^\/v1\/(trending|counters|histograms|presence|leaderboards)\/[^/]+\/?$/],
  ["PUT", /^\/v1\/(histograms|leaderboards)\/[^/]+\/?$/],
  ["POST", /^\/v1\/counters\/[^/]+\/union\/?$/],
  ["GET", /^\/v1\/ingest\/status\/?$/],
  ["*", /^\/v1\/webhooks(\/.*)?$/],
];

/** The scope a /v1 request needs before its route runs (the route may require more). */
export function defaultScope(method: string, path: string): Scope {
  if (
    ADMIN_ROUTES.some(([m, re]) => (m === "*" || m === method || (m === "GET" && method === "HEAD")) && re.test(path))
  )
    return "admin";
  if (method === "GET" || method === "HEAD") return "read";
  return method === "POST" && READ_POSTS.some((re) => re.test(path)) ? "read" : "ingest";
}

/** Authenticates the request and requires `scope`; by default GETs (and the read-only POSTs above) need read, other methods ingest. */
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
    // The dashboard keeps its key in the browser's localStorage: a key that can
    // write there (admin, or ingest, which also deletes counter members and
    // players) would let any script on the page change or delete data. Its
    // requests say so with this header and must use a read-only key (an admin
    // key holds ingest too, see scopesOf).
    if (scopes.has("ingest") && c.req.header(DASHBOARD_HEADER) === "dashboard")
      throw new ForbiddenError(DASHBOARD_ADMIN_REFUSED);
    const needed = scope ?? defaultScope(c.req.method, c.req.path);
    if (!scopes.has(needed)) throw new ForbiddenError(`This endpoint needs ${NEEDS[needed]}.`);
    await next();
  });
}
