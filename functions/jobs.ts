/**
 * The Worker's periodic jobs: each feature declares its own (`export const jobs` in
 * src/<feature>/jobs.ts, keyed by the name cron and POST /internal/jobs/{job} use), and this
 * module only composes them and says which cron expression runs which.
 */
import { jobs as ingestJobs } from "../src/ingest/jobs.ts";
import type { Job } from "../src/jobs.ts";
import { sweepCountersJob } from "../src/counters/jobs.ts";
import { trimPresenceJob } from "../src/presence/jobs.ts";
import { snapshotJob } from "../src/leaderboards/snapshot.ts";
import { compactTrendingJob } from "../src/trending/jobs.ts";

export type { Job };

// Until every feature's jobs.ts exports its `jobs` record, its jobs are listed here by their
// served names; each of these lines then becomes `import { jobs as <feature>Jobs } from ...`.
const trendingJobs: Record<string, Job> = { compact: compactTrendingJob };
const presenceJobs: Record<string, Job> = { trim: trimPresenceJob };
const countersJobs: Record<string, Job> = { "sweep-counters": sweepCountersJob };
const leaderboardsJobs: Record<string, Job> = { "leaderboards.snapshot": snapshotJob };

/** The features' jobs in one map; a name two features claim is a bug, caught when the Worker loads. */
function compose(features: readonly Record<string, Job>[]): Record<string, Job> {
  const all: Record<string, Job> = {};
  for (const jobs of features) {
    for (const [name, job] of Object.entries(jobs)) {
      if (Object.hasOwn(all, name)) throw new Error(`two features declare the job '${name}'`);
      all[name] = job;
    }
  }
  return all;
}

/** The jobs by name, for both the cron triggers and POST /internal/jobs/{job} (in this order in its 404). */
export const JOBS: Record<string, Job> = compose([trendingJobs, presenceJobs, countersJobs, leaderboardsJobs, ingestJobs]);

/** Which jobs each cron expression of wrangler.toml runs. */
export const CRON_JOBS: Record<string, string[]> = {
  "5 * * * *": ["compact", "sweep-counters", "leaderboards.snapshot"],
  "* * * * *": ["trim"],
};
