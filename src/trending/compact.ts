import type { Ctx } from "../context.ts";
import { asList, runRead, runWrite } from "../redis/script.ts";
import { HOUR, hourIndex } from "../time.ts";
import { registryKeys, streamKeys } from "./keys.ts";
import { horizonOf, MAX_TOP_N, secondsUntil, STANDARD_WINDOWS } from "./options.ts";
import { compactScript, dueScript } from "./scripts.ts";

export interface CompactOptions {
  /** Hours a bucket lives after its hour. @default 50 */
  retentionHours?: number;
  /** Members kept per finished hour; 0 = never trim. 24 × the largest n, as the seed post reasons (and `TRENDING_KEEP`). @default 2400 */
  keep?: number;
  /** Streams compacted per script (one round trip). @default 20 */
  batchSize?: number;
  /** Batches per run; the rest waits for the next run (`more: true`). @default 100 */
  maxBatches?: number;
}

export interface CompactResult {
  [key: string]: number | boolean;
  /** Streams compacted in this run. */
  streams: number;
  /** Hour buckets trimmed to `keep` members. */
  hoursTrimmed: number;
  /** Members removed by trimming. */
  membersRemoved: number;
  /** Standard-window unions built for the current hour. */
  unionsBuilt: number;
  /** Streams another overlapping run had already done. */
  skipped: number;
  /** Streams whose buckets had all expired, removed from the registry. */
  pruned: number;
  /** Round trips to Redis. */
  batches: number;
  /** The batch limit was hit: run again to finish (or wait for the next hour). */
  more: boolean;
}

/**
 * Hourly compaction. For every stream written in a finished hour since its last
 * compaction (the `_dirty` queue, never a key scan): trims each such hour to its
 * top `keep` members, recording the highest count removed, and builds the 24 h
 * and 48 h unions for the current hour. Missed hours are caught up because the
 * queue remembers the earliest uncompacted hour. The same queue brings back a
 * quiet stream when its last bucket has expired, to leave the registry.
 * Idempotent and overlap-safe: each stream is compacted inside one atomic
 * script that re-checks the queue. A run reads the queue (one command) and
 * stops when it holds less than a batch: nothing to do costs one round trip.
 */
export async function compactTrending(ctx: Ctx, options: CompactOptions = {}): Promise<CompactResult> {
  const retentionHours = options.retentionHours ?? 50;
  const keep = options.keep ?? 24 * MAX_TOP_N;
  const batchSize = options.batchSize ?? 20;
  const maxBatches = options.maxBatches ?? 100;
  const H = hourIndex(ctx.now);
  const horizon = horizonOf(retentionHours);
  const windows = STANDARD_WINDOWS.filter((w) => w <= horizon);
  const widest = Math.max(0, ...windows);
  const reg = registryKeys(ctx.prefix);
  const result: CompactResult = { streams: 0, hoursTrimmed: 0, membersRemoved: 0, unionsBuilt: 0, skipped: 0, pruned: 0, batches: 0, more: false };
  const unionTtl = secondsUntil((H + 1) * HOUR, ctx.now);

  for (let batch = 0; ; batch++) {
    if (batch >= maxBatches) {
      result.more = true;
      break;
    }
    const flat = asList(await runRead<string[] | Record<string, never>>(ctx.redis, dueScript, [reg.dirty], [H, batchSize]));
    result.batches++;
    if (flat.length === 0) break;
    const keys: string[] = [reg.dirty, reg.seen, reg.names];
    const args: (string | number)[] = [H, keep, horizon, unionTtl, retentionHours, windows.length, ...windows];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const name = flat[i] ?? "";
      const since = Number(flat[i + 1]);
      const from = Math.min(Math.max(since, H - horizon), H - widest);
      const sk = streamKeys(ctx.prefix, name);
      keys.push(...windows.map((w) => sk.union(w, H)));
      for (let h = from; h < H; h++) keys.push(sk.bucket(h));
      args.push(name, from);
    }
    const { value: rows } = await runWrite<[string, string, number, number, number][]>(ctx.redis, compactScript, keys, args);
    result.batches++;
    let requeued = false;
    for (const [, status, trimmed, removed, unions] of rows) {
      if (status === "compacted") result.streams++;
      else if (status === "pruned") result.pruned++;
      else result.skipped++;
      if (status === "requeued") requeued = true;
      result.hoursTrimmed += trimmed;
      result.membersRemoved += removed;
      result.unionsBuilt += unions;
    }
    // less than a batch was due: the queue is drained (a requeued stream is taken at once)
    if (flat.length / 2 < batchSize && !requeued) break;
  }
  return result;
}
