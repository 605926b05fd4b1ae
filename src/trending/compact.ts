import type { Ctx } from "../context.ts";
import { untilSpent } from "../jobs.ts";
import { asList } from "../redis/script.ts";
import { HOUR, hourIndex } from "../time.ts";
import { registryKeys, secondsUntil, streamKeys } from "./keys.ts";
import { compactScript, dueScript } from "./scripts.ts";
import { horizonOf, MAX_TOP_N } from "./validate.ts";

export interface CompactOptions {
  /** Hours a bucket lives after its hour. @default 50 */
  retentionHours?: number;
  /** Members kept per finished hour; 0 = never trim. 24 × the largest n, as source post 000 (docs/background.md) reasons (and `TRENDING_KEEP`). @default 2400 */
  keep?: number;
  /** Streams compacted per script (one round trip). @default 20 */
  batchSize?: number;
  /** Scripts (two round trips each) per run; the rest waits for the next run (`more: true`). @default 100 */
  maxBatches?: number;
  /**
   * Member moves one script may make (trimming an hour costs min(removed, keep)): it stops
   * starting hours past this, and the run goes on with another script. @default 10000
   */
  scriptBudget?: number;
  /**
   * Subrequests the run may still send of its plan (its job's share: `JobBudget.planned`), read
   * before each batch: a batch starts only while they pay it and the closing look at the queue, so
   * a run that sent more than it planned (Redis lost its scripts twice in it: a re-send each)
   * stops with `more: true` a batch early, not at its share's end (review 15). @default unbounded
   */
  left?: () => number;
}

/** Default member moves per compaction script: about 15 ms of Redis time at 1M members an hour (bench/scaling/trending.ts: four 1M-member hours trimmed to 2,400 by copy). */
export const COMPACT_SCRIPT_BUDGET = 10_000;

export interface CompactResult {
  [key: string]: number | boolean;
  /** Streams compacted in this run. */
  streams: number;
  /** Hour buckets trimmed to `keep` members. */
  hoursTrimmed: number;
  /** Members removed by trimming. */
  membersRemoved: number;
  /** Unions a read had built this hour without the previous hour, completed with it. */
  unionsBuilt: number;
  /** Streams another overlapping run had already done. */
  skipped: number;
  /** Streams whose buckets had all expired, removed from the registry. */
  pruned: number;
  /** Round trips to Redis. */
  batches: number;
  /** Work is left (the run stopped at its bound): run again, or the next run finishes it. */
  more: boolean;
}

/**
 * Hourly compaction. For every stream written in a finished hour since its last
 * compaction (the `_dirty` queue, never a key scan): trims each such hour to its
 * top `keep` members, recording the highest count removed, and completes the
 * unions readers built this hour without the previous hour. Missed hours are
 * caught up because the queue remembers the earliest uncompacted hour. The
 * same queue brings back a quiet stream when its last bucket has expired, to
 * leave the registry. Idempotent and overlap-safe: each step is one atomic
 * script that re-checks the queue. Each script does bounded work (scriptBudget
 * member moves, whatever the hours hold); a stream left half done keeps its
 * place in the queue at the first hour not done, and the run goes on with
 * another script while its budget of scripts (maxBatches) lasts. A run reads
 * the queue (one command) and stops when it holds less than a batch: nothing
 * to do costs one round trip.
 */
export async function compact(ctx: Ctx, options: CompactOptions = {}): Promise<CompactResult> {
  const retentionHours = options.retentionHours ?? 50;
  const keep = options.keep ?? 24 * MAX_TOP_N;
  const batchSize = options.batchSize ?? 20;
  const maxBatches = options.maxBatches ?? 100;
  const budget = options.scriptBudget ?? COMPACT_SCRIPT_BUDGET;
  const left = options.left ?? (() => Number.POSITIVE_INFINITY);
  const H = hourIndex(ctx.now);
  const horizon = horizonOf(retentionHours);
  const reg = registryKeys(ctx.prefix);
  const result: CompactResult = {
    streams: 0,
    hoursTrimmed: 0,
    membersRemoved: 0,
    unionsBuilt: 0,
    skipped: 0,
    pruned: 0,
    batches: 0,
    more: false,
  };
  const unionTtl = secondsUntil((H + 1) * HOUR, ctx.now);

  // the last batch was full and all of it done: whether work is left is the queue's to say
  let drainedFull = false;
  // a step refused unsent at the invocation's limit (src/job-budget.ts: Redis lost its scripts
  // once more in the run's last step): nothing of it ran, the queue keeps the rest
  const stopped = () => {
    result.more = true;
    return result;
  };
  return untilSpent(async () => {
    for (let batch = 0; ; batch++) {
      // a batch (2) and the closing look (1); in a run that sent only what it planned, always paid
      if (batch >= maxBatches || left() < 3) {
        // The last script left work (a stream half done or not reached), or took a full batch: then
        // one look at the queue (a round trip, in that case only) tells whether it is empty, so
        // `more: true` always means work is left (it said so after a run that drained the queue
        // exactly; found in review 3).
        if (drainedFull && left() >= 1) {
          const rest = await dueScript.run<string[] | Record<string, never>>(
            ctx.redis,
            { dirty: reg.dirty },
            { hour: H, limit: 1 },
          );
          result.batches++;
          result.more = asList(rest).length > 0;
        } else result.more = true;
        break;
      }
      const flat = asList(
        await dueScript.run<string[] | Record<string, never>>(
          ctx.redis,
          { dirty: reg.dirty },
          { hour: H, limit: batchSize },
        ),
      );
      result.batches++;
      if (flat.length === 0) break;
      const perStream: string[] = [];
      const streams: string[] = [];
      const froms: number[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const name = flat[i] ?? "";
        const since = Number(flat[i + 1]);
        const from = Math.min(Math.max(since, H - horizon), H - 1);
        const sk = streamKeys(ctx.prefix, name);
        perStream.push(...sk.unionsOf(H), sk.scratch);
        for (let h = from; h < H; h++) perStream.push(sk.bucket(h));
        streams.push(name);
        froms.push(from);
      }
      const { value: rows } = await compactScript.run<[string, string, number, number, number][]>(
        ctx.redis,
        { dirty: reg.dirty, seen: reg.seen, names: reg.names, perStream },
        { H, keep, horizon, unionTtl, retention: retentionHours, now: ctx.now, budget, streams, froms },
      );
      result.batches++;
      let again = false;
      for (const [, status, trimmed, removed, unions] of rows) {
        if (status === "compacted") result.streams++;
        else if (status === "pruned") result.pruned++;
        else if (status === "skipped") result.skipped++;
        // requeued (a late event), partial (budget spent half way), deferred (not reached): the next script takes it
        else again = true;
        result.hoursTrimmed += trimmed;
        result.membersRemoved += removed;
        result.unionsBuilt += unions;
      }
      // less than a batch was due and all of it done: the queue is drained
      if (flat.length / 2 < batchSize && !again) break;
      drainedFull = !again;
    }
    return result;
  }, stopped);
}
