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

/** Orphaned buckets one batch frees (a pick and a sweep: two round trips, one script each). */
export const SWEEP_BATCH = 500;
/**
 * Batches one run sends at most (10,000 buckets, 40 subrequests): a run goes on while its share of
 * the invocation pays a batch, so a day of deletes the cron missed is caught up in one run (review
 * 19: one batch a run took 19 hourly runs to free a year-long hourly counter's ~9,100 buckets).
 */
export const SWEEP_MAX_BATCHES = 20;

/**
 * Frees the buckets of deleted counters. Deleting a counter makes them
 * invisible at once but cannot name their keys in its one script; it lists
 * them in the purge hash instead, and this job deletes those that no new life
 * of the counter has claimed since, a batch at a time while its share of the
 * invocation's subrequests lasts (SWEEP_MAX_BATCHES at most). Bounded,
 * idempotent, safe to overlap: each batch is one atomic script.
 */
const sweep: Job = async (ctx) => {
  // two subrequests at most (the pick and the sweep): without them, the purge hash waits
  if (leftOf(ctx) < 2) return deferred();
  const purge = K.purge(ctx.prefix);
  const area = `${ctx.prefix}:counters:`;
  let checked = 0;
  let deleted = 0;
  // A step the plan no longer pays (Redis lost its scripts twice in the invocation), or refused
  // unsent at the limit: nothing of that batch was swept, the purge hash keeps it for the next run
  const stopped = () => ({ checked, deleted, more: true });
  return untilSpent(async () => {
    for (let batch = 0; ; batch++) {
      // the next batch only while the share pays both its scripts, under the run's cap
      if (batch > 0 && (batch >= SWEEP_MAX_BATCHES || plannedOf(ctx) < 2)) return stopped();
      const pending = asList(await sweepPendingScript.run<string[]>(ctx.redis, { purge }, { count: SWEEP_BATCH }));
      if (pending.length === 0) return { checked, deleted, more: false };
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
      checked += pending.length;
      deleted += value[0];
      // `more`, as compaction says it: the purge hash still lists buckets (one HLEN in each batch; an
      // operator could not tell before; noticed in review 3). Empty: the run is done
      if (value[1] === 0) return { checked, deleted, more: false };
    }
  }, stopped);
};

/** The sweep, with what it needs of an invocation's subrequests: its two scripts, one call each. */
export const sweepCountersJob = withNeeds(sweep, { scripts: 2, least: 2 });

/** The counters' jobs by name (functions/jobs.ts schedules them). */
export const jobs: Record<string, Job> = { "sweep-counters": sweepCountersJob };
