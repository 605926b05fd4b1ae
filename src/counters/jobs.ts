import type { Job } from "../jobs.ts";
import { asList, defineReadScript, runRead, runWrite } from "../redis/script.ts";
import { counterKeys as K } from "./keys.ts";
import { SWEEP } from "./scripts.ts";

/** Orphaned buckets freed per run (two round trips; a job, not an API call). */
export const SWEEP_BATCH = 500;

const PENDING = defineReadScript("counters.sweepPending", `return cjson.encode(redis.call('HRANDFIELD', KEYS[1], tonumber(ARGV[1])))`);

/**
 * Frees the buckets of deleted counters. Deleting a counter makes them
 * invisible at once but cannot name their keys in its one script; it lists
 * them in the purge hash instead, and this job deletes those that no new life
 * of the counter has claimed since. Bounded, idempotent, safe to overlap.
 */
export const sweepCountersJob: Job = async (ctx) => {
  const purge = K.purge(ctx.prefix);
  const pending = asList(await runRead<string[]>(ctx.redis, PENDING, [purge], [SWEEP_BATCH]));
  if (pending.length === 0) return { checked: 0, deleted: 0 };
  const area = `${ctx.prefix}:counters:`;
  const keys = [purge];
  for (const bucket of pending) {
    // bucket keys are <prefix>:counters:<name>:<period>:<label>; names hold no ':'
    const name = bucket.startsWith(area) ? bucket.slice(area.length).split(":")[0] : undefined;
    if (name) keys.push(bucket, K.index(ctx.prefix, name));
  }
  const { value } = await runWrite<number>(ctx.redis, SWEEP, keys, []);
  return { checked: pending.length, deleted: value };
};
