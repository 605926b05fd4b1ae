import type { Job } from "../jobs.ts";
import { compactTrending } from "./compact.ts";

/** Cron "5 * * * *" and `POST /internal/jobs/compact`: hourly trending compaction. */
export const compactTrendingJob: Job = (ctx, config) =>
  compactTrending(ctx, { retentionHours: config.trendingRetentionHours, keep: config.trendingKeep, maxBatches: config.trendingCompactBatches });
