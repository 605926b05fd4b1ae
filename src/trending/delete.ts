/**
 * DELETE of a stream (its own module: trending.ts holds the writes and reads a call runs every time).
 */
import type { Ctx } from "../context.ts";
import type { Written } from "../redis/script.ts";
import { hourIndex } from "../time.ts";
import { registryKeys, streamKeys } from "./keys.ts";
import { deleteScript, unlinkScript } from "./scripts.ts";
import { assertStream, horizonOf, type TrendingSettings } from "./validate.ts";

/** Most bucket keys one script of a DELETE unlinks past the first (5 `UNLINK`s of 200). */
export const DELETE_KEYS_PER_SCRIPT = 1000;

/**
 * Deletes every key of a stream and its registry entries: one script for all a write can still reach
 * (the horizon's buckets, the previous, current and next hour's unions, the legacy cuts hash, the registry);
 * with a retention beyond the horizon (up to 9,600 h) the older buckets, which no write reaches, follow
 * in scripts of at most DELETE_KEYS_PER_SCRIPT keys (review 10: they were left to expire). Returns how
 * many keys existed.
 */
export async function deleteStream(
  ctx: Ctx,
  stream: string,
  options: TrendingSettings,
): Promise<Written<{ deleted: number }>> {
  assertStream(stream);
  const H = hourIndex(ctx.now);
  const keys = streamKeys(ctx.prefix, stream);
  const reg = registryKeys(ctx.prefix);
  // a bucket of hour h lives until h + 1 + retention; one hour more for a writer whose clock is ahead
  const reachable = H - horizonOf(options.retentionHours) - 1;
  const oldest = H - options.retentionHours - 1;
  const buckets = Array.from({ length: H + 2 - reachable }, (_, i) => keys.bucket(reachable + i));
  // unions live until the end of their hour; H + 1 covers a reader whose clock is a little ahead, and
  // H - 1 one still in the previous hour (review 24: it read the deleted stream from that union until
  // its clock turned, as review 21 found for a late write); 3 keys more in the same UNLINK
  const unions = [H - 1, H, H + 1].flatMap((hour) => keys.unionsOf(hour));
  const { value, replayed } = await deleteScript.run<number>(
    ctx.redis,
    { names: reg.names, seen: reg.seen, dirty: reg.dirty, doomed: [keys.cuts, keys.scratch, ...buckets, ...unions] },
    { stream },
  );
  let deleted = value;
  for (let to = reachable - 1; to >= oldest; to -= DELETE_KEYS_PER_SCRIPT) {
    const from = Math.max(oldest, to - DELETE_KEYS_PER_SCRIPT + 1);
    const older = Array.from({ length: to + 1 - from }, (_, i) => keys.bucket(from + i));
    deleted += (await unlinkScript.run<number>(ctx.redis, { doomed: older }, {})).value;
  }
  return { deleted, replayed };
}
