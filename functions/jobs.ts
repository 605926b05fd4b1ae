import type { Job } from "../src/jobs.ts";
import { sweepCountersJob } from "../src/counters/jobs.ts";
import { jobs as trendingJobs } from "../src/trending/jobs.ts";
import { trimPresenceJob } from "../src/presence/jobs.ts";
import { snapshotJob } from "../src/leaderboards/snapshot.ts";

export type { Job };

/** The jobs by name, for both the cron triggers and POST /internal/jobs/{job}. */
export const JOBS: Record<string, Job> = {
  ...trendingJobs,
  trim: trimPresenceJob,
  "sweep-counters": sweepCountersJob,
  "leaderboards.snapshot": snapshotJob,
};

/** Which jobs each cron expression of wrangler.toml runs. */
export const CRON_JOBS: Record<string, string[]> = {
  "5 * * * *": ["compact", "sweep-counters", "leaderboards.snapshot"],
  "* * * * *": ["trim"],
};
