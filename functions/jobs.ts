import type { Job } from "../src/jobs.ts";
import { sweepCountersJob } from "../src/counters/jobs.ts";
import { compactTrendingJob } from "../src/trending/jobs.ts";
import { trimPresenceJob } from "../src/presence/jobs.ts";
import * as leaderboards from "../src/leaderboards/index.ts";

export type { Job };

/** The jobs by name, for both the cron triggers and POST /internal/jobs/{job}. */
export const JOBS: Record<string, Job> = {
  compact: compactTrendingJob,
  trim: trimPresenceJob,
  "sweep-counters": sweepCountersJob,
  ...leaderboards.jobs,
};

/** Which jobs each cron expression of wrangler.toml runs. */
export const CRON_JOBS: Record<string, string[]> = {
  "5 * * * *": ["compact", "sweep-counters", "leaderboards.snapshot"],
  "* * * * *": ["trim"],
};
