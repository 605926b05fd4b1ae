import { deferred, leftOf, plannedOf, withNeeds, type Job } from "../jobs.ts";
import { compact } from "./compact.ts";

/**
 * Cron "5 * * * *" and `POST /internal/jobs/compact`: hourly trending compaction. A batch is two
 * subrequests (the queue read and the script) and a run may end with one more look at the queue,
 * so the run sends at most TRENDING_COMPACT_BATCHES batches, and fewer when its share of the
 * invocation's subrequests is smaller: `more: true` then, and the next run goes on from the queue.
 */
export const compactTrendingJob: Job = withNeeds(
  async (ctx, config) => {
    const affordable = Math.floor((leftOf(ctx) - 1) / 2);
    if (affordable < 1) return deferred();
    return compact(ctx, {
      retentionHours: config.trendingRetentionHours,
      keep: config.trendingKeep,
      maxBatches: Math.min(config.trendingCompactBatches, affordable),
      left: () => plannedOf(ctx),
    });
  },
  // the queue read and the compaction script; one batch and the closing look at the queue
  { scripts: 2, least: 3 },
);

/** The trending jobs by name (the name is the job's path in `POST /internal/jobs/{job}`). */
export const jobs: Record<string, Job> = { compact: compactTrendingJob };
