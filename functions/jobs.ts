import type { Job } from "../src/jobs.ts";
import { jobs as counterJobs } from "../src/counters/jobs.ts";
import { jobs as trendingJobs } from "../src/trending/jobs.ts";
import { jobs as presenceJobs } from "../src/presence/jobs.ts";
import { jobs as leaderboardJobs } from "../src/leaderboards/jobs.ts";

export type { Job };

/** The jobs by name, for both the cron triggers and POST /internal/jobs/{job}. */
export const JOBS: Record<string, Job> = {
  ...trendingJobs,
  ...presenceJobs,
  ...counterJobs,
  ...leaderboardJobs,
};

/** Which jobs each cron expression of wrangler.toml runs. */
export const CRON_JOBS: Record<string, string[]> = {
  "5 * * * *": ["compact", "sweep-counters", "leaderboards.snapshot"],
  "* * * * *": ["trim"],
};
