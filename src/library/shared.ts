/**
 * What the handles share (./handles.ts): the runtime they are bound to, the write options, and
 * the argument helpers every feature's handle uses.
 */
import type { Config } from "../config.ts";
import type { Ctx } from "../context.ts";
import { ValidationError } from "../errors.ts";
import { keyOf } from "../keys.ts";
import type { Idempotency } from "../redis/script.ts";
import { parseWindow } from "../time.ts";

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
   * nothing; the same key with other arguments is a ConflictError. Costs one
   * GET and one SET inside the same script.
   * @default undefined (no record kept)
   */
  idempotencyKey?: string;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The idempotency record of a library write: its own scope (`lib <operation> <name>`), never a service request's. */
export async function idempotencyOf(
  ctx: Ctx,
  scope: string,
  options: WriteOptions | undefined,
  args: unknown,
): Promise<Idempotency | undefined> {
  const key = options?.idempotencyKey;
  if (key === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new ValidationError("idempotencyKey must be 1-255 visible ASCII characters.", [
      { path: "idempotencyKey", message: "1-255 visible ASCII characters" },
    ]);
  }
  return {
    key: keyOf(ctx.prefix, "idem", await sha256(`lib ${scope}\n${key}`)),
    fingerprint: await sha256(JSON.stringify(args)),
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
