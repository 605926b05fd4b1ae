import { deferred, leftOf, plannedOf, untilSpent, withNeeds, type Job } from "../jobs.ts";
import { asList, defineScript } from "../redis/script.ts";
import { counterKeys as K } from "./keys.ts";

// The sweep's scripts live here, beside their only caller.

/** Up to `count` bucket keys of the purge hash, picked at random (HRANDFIELD). */
export const sweepPendingScript = defineScript({
  name: "counters.sweepPending",
  write: false,
  keys: ["purge"],
  args: ["count"],
  lua: "return redis.call('HRANDFIELD', purge, tonumber(count))",
});

/**
 * Frees orphaned `buckets` (each with its counter's index in `indexes`) that no new life of
 * their counter has claimed since, and drops them from the purge hash. Returns how many were
 * deleted and how many the purge hash still lists (the run's `more`).
 */
export const sweepScript = defineScript({
  name: "counters.sweep",
  write: true,
  keys: ["purge", "...buckets", "...indexes"],
  args: [],
  lua: `
local deleted = 0
for i, bucket in ipairs(buckets) do
  if redis.call('HEXISTS', indexes[i], 'b:' .. bucket) == 0 then deleted = deleted + redis.call('UNLINK', bucket) end
  redis.call('HDEL', purge, bucket)
end
return {deleted, redis.call('HLEN', purge)}
`,
});

/** Orphaned buckets freed per run (two round trips; a job, not an API call). */
export const SWEEP_BATCH = 500;

/**
 * Frees the buckets of deleted counters. Deleting a counter makes them
 * invisible at once but cannot name their keys in its one script; it lists
 * them in the purge hash instead, and this job deletes those that no new life
 * of the counter has claimed since. Bounded, idempotent, safe to overlap.
 */
const sweep: Job = async (ctx) => {
  // two subrequests at most (the pick and the sweep): without them, the purge hash waits
  if (leftOf(ctx) < 2) return deferred();
  const purge = K.purge(ctx.prefix);
  // A step the plan no longer pays (Redis lost its scripts twice in the invocation), or refused
  // unsent at the limit: nothing was swept, and the purge hash keeps every bucket for the next run
  const stopped = () => ({ checked: 0, deleted: 0, more: true });
  return untilSpent(async () => {
    const pending = asList(await sweepPendingScript.run<string[]>(ctx.redis, { purge }, { count: SWEEP_BATCH }));
    if (pending.length === 0) return { checked: 0, deleted: 0, more: false };
    const area = `${ctx.prefix}:counters:`;
    const buckets: string[] = [];
    const indexes: string[] = [];
    for (const bucket of pending) {
      // bucket keys are <prefix>:counters:<name>:<period>:<label>; names hold no ':'
      const name = bucket.startsWith(area) ? bucket.slice(area.length).split(":")[0] : undefined;
      if (!name) continue;
      buckets.push(bucket);
      indexes.push(K.index(ctx.prefix, name));
    }
    if (plannedOf(ctx) < 1) return stopped();
    const { value } = await sweepScript.run<[number, number]>(ctx.redis, { purge, buckets, indexes }, {});
    // `more`, as compaction says it: the purge hash still lists buckets for the next run (one HLEN in
    // a run that had work; an operator could not tell before; noticed in review 3)
    return { checked: pending.length, deleted: value[0], more: value[1] > 0 };
  }, stopped);
};

/** The sweep, with what it needs of an invocation's subrequests: its two scripts, one call each. */
export const sweepCountersJob = withNeeds(sweep, { scripts: 2, least: 2 });

/** The counters' jobs by name (functions/jobs.ts schedules them). */
export const jobs: Record<string, Job> = { "sweep-counters": sweepCountersJob };
