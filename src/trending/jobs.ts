import type { Job } from "../jobs.ts";
import { compact } from "./compact.ts";

/** Cron "5 * * * *" and `POST /internal/jobs/compact`: hourly trending compaction. */
export const compactTrendingJob: Job = (ctx, config) =>
  compact(ctx, {
    retentionHours: config.trendingRetentionHours,
    keep: config.trendingKeep,
    maxBatches: config.trendingCompactBatches,
  });

/** The trending jobs by name (the name is the job's path in `POST /internal/jobs/{job}`). */
export const jobs: Record<string, Job> = { compact: compactTrendingJob };
