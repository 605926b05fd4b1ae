import type { Job } from "../src/jobs.ts";
import { sweepCountersJob } from "../src/counters/jobs.ts";
import { compactTrendingJob } from "../src/trending/jobs.ts";
import { trimPresenceJob } from "../src/presence/jobs.ts";
import { snapshotJob } from "../src/leaderboards/snapshot.ts";
import * as webhooks from "../src/webhooks/index.ts";

export type { Job };

/** The jobs by name, for both the cron triggers and POST /internal/jobs/{job}. */
export const JOBS: Record<string, Job> = {
  compact: compactTrendingJob,
  trim: trimPresenceJob,
  "sweep-counters": sweepCountersJob,
  "leaderboards.snapshot": snapshotJob,
  ...webhooks.jobs,
};

/** Which jobs each cron expression of wrangler.toml runs. */
export const CRON_JOBS: Record<string, string[]> = {
  // webhooks jobs run after the jobs whose results they read (compaction, the presence trim)
  "5 * * * *": ["compact", "webhooks.trending", "sweep-counters", "leaderboards.snapshot"],
  "* * * * *": ["trim", "webhooks"],
};
