import type { Context } from "hono";
import type { AppEnv } from "../types.ts";

/**
 * Marks a replayed response (`Idempotent-Replayed: true`), so a client retrying with the same
 * Idempotency-Key can tell its write was not applied again. Routes call it with their write's
 * `replayed`; the summarised replay of a large result is marked by the error handler instead.
 */
export function markReplay(c: Context<AppEnv>, replayed: boolean): void {
  if (replayed) c.header("Idempotent-Replayed", "true");
}
