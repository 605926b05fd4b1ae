/**
 * What the handles share (./handles.ts): the runtime they are bound to, the write options, and
 * the argument helpers every feature's handle uses.
 */
import type { Config } from "../config.ts";
import type { Ctx } from "../context.ts";
import { ValidationError } from "../errors.ts";
import { keyOf } from "../keys.ts";
import type { SeasonOption } from "../leaderboards/index.ts";
import { canonicalJson } from "../redis/canonical-json.ts";
import type { Idempotency } from "../redis/script.ts";
import { parseWindow } from "../time.ts";
import { invalid } from "../validation.ts";
import { shapeIssue, WRITE_OPTIONS } from "./inputs.ts";

/**
 * What every handle shares: the settings and a fresh `Ctx` per call. Handles are made by
 * `Edgestats` (`stats.counter(name)`, …), not constructed directly; this type is public because
 * their constructors name it (stripped as internal, the published types did not compile).
 */
export interface Runtime {
  config: Config;
  ctx(): Ctx;
}

export interface WriteOptions {
  /**
   * Makes the write exactly-once: a repeat with the same key (on the same
   * handle and operation) within 24 h returns the first result and writes
   * nothing; the same key with other arguments is a ConflictError. Arguments
   * that are the same JSON value (keys in another order, an `undefined` field)
   * are the same arguments. Costs one GET and one SET inside the same script.
   * @default undefined (no record kept)
   */
  idempotencyKey?: string;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The idempotency record of a library write: its own scope (`lib <operation> <name>`), never a
 * service request's. Its arguments are identified as a service request's body is
 * (functions/middleware/idempotency.ts), by two digests: `fingerprint`, the SHA-256 of
 * `JSON.stringify(args)` (what every version has hashed, so a retry in flight across an upgrade,
 * either way, still matches its record), and `canonical`, the SHA-256 of the same JSON value as
 * canonical JSON (src/redis/canonical-json.ts), kept beside it in the record. A call matches a
 * record when either digest does (SAME_REQUEST_LUA), so a retry that builds the same arguments in
 * another key order, or with an `undefined` field JSON drops, is a replay and not a ConflictError.
 */
export async function idempotencyOf(
  ctx: Ctx,
  scope: string,
  options: WriteOptions | undefined,
  args: unknown,
): Promise<Idempotency | undefined> {
  // a misspelt `idempotencyKey` would make the write at-least-once without a word
  // labelled `header`: the service takes the key as the Idempotency-Key header (./locate.ts)
  const issue = options === undefined ? null : shapeIssue(options, WRITE_OPTIONS, "");
  if (issue) invalid([{ in: "header", ...issue }]);
  const key = options?.idempotencyKey;
  if (key === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new ValidationError("idempotencyKey must be 1-255 visible ASCII characters.", [
      { in: "header", path: "idempotencyKey", message: "1-255 visible ASCII characters" },
    ]);
  }
  const json = JSON.stringify(args);
  return {
    key: keyOf(ctx.prefix, "idem", await sha256(`lib ${scope}\n${key}`)),
    fingerprint: await sha256(json),
    // canonicalised from the parsed text, not `args`: the JSON value, as JSON.stringify sees it
    // (undefined fields dropped, `toJSON` applied); `json` is undefined only for no arguments at all
    canonical: json === undefined ? undefined : await sha256(canonicalJson(JSON.parse(json))),
  };
}

export function windowHours(window: string | number | undefined): number | undefined {
  if (window === undefined || typeof window === "number") return window;
  const hours = parseWindow(window);
  if (hours === null)
    throw new ValidationError("window must be 1h..168h or 1d..7d.", [
      { path: "window", message: "must be 1h..168h or 1d..7d" },
    ]);
  return hours;
}

export const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** `trending(s).rising(options)`: `GET …/rising`'s query. */
export interface RisingOptions {
  /** Items to return, 1..100. @default 10 */
  n?: number;
  /** Finished hours the baseline averages over: `24h`, `2d` or whole hours, at most the retention. @default "24h" (the retention if shorter) */
  baseline?: string | number;
}

/** `trending(s).history(member, options)`: `GET …/history`'s query but `member`. */
export interface TrendingHistoryOptions {
  /** Finished hours before the current one, at most the retention. @default 48 (the retention if shorter) */
  hours?: number;
}

/** `presence(r).members(options)`: `GET …/members`'s query. */
export interface MembersOptions {
  /** Ids per page, 1..1,000. @default 100 */
  limit?: number;
  /** The previous page's `nextCursor`. @default undefined (the first page) */
  cursor?: string;
}

/** `presence(r).history(options)`: `GET …/history`'s query. */
export interface PresenceHistoryOptions {
  /** Hours of per-minute samples, 1..24. @default 24 */
  hours?: number;
}

/** `leaderboard(b).around(player, options)`: `GET …/around`'s query. */
export interface AroundOptions extends SeasonOption {
  /** Rows above and below the player, 0..50. @default 5 */
  k?: number;
}
