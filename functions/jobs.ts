/**
 * The Worker's periodic jobs: each feature declares its own (`export const jobs` in
 * src/<feature>/jobs.ts, keyed by the name cron and POST /internal/jobs/{job} use), and this
 * module only composes them and says which cron expression runs which.
 */
import { jobs as countersJobs } from "../src/counters/jobs.ts";
import { jobs as histogramsJobs } from "../src/histograms/jobs.ts";
import { jobs as ingestJobs } from "../src/ingest/jobs.ts";
import { SubrequestBudget, countingRedis } from "../src/job-budget.ts";
import type { Job } from "../src/jobs.ts";
import { jobs as leaderboardsJobs } from "../src/leaderboards/jobs.ts";
import { jobs as presenceJobs } from "../src/presence/jobs.ts";
import { jobs as trendingJobs } from "../src/trending/jobs.ts";
import { jobs as webhooksJobs } from "../src/webhooks/jobs.ts";

export type { Job };

/**
 * Subrequests a POST /internal/jobs request may have sent before its job runs (the rate limit's
 * round trip, and one to spare), kept out of the job's budget: the request is the invocation.
 */
const REQUEST_SUBREQUESTS = 2;

/**
 * What the job needs kept back for it when jobs before it in `invocation` run (`Job.needs`): its
 * smallest step and a re-send for each of its scripts not known loaded in this isolate.
 */
export function needsOf(job: Job, invocation: SubrequestBudget): number {
  return invocation.needsOf(job.needs);
}

/**
 * `job`, run with a subrequest budget of its own when it has none (POST /internal/jobs/{job}: one
 * job per request, with the request's SUBREQUEST_LIMIT); the cron's runs pass theirs, shared by
 * the trigger's jobs (functions/scheduled.ts).
 */
function budgeted(job: Job): Job {
  const run: Job = async (ctx, config) => {
    if (ctx.budget) return job(ctx, config);
    const invocation = new SubrequestBudget(config.subrequestLimit - REQUEST_SUBREQUESTS);
    const budget = invocation.allowance(invocation.limit, job.needs ?? 0);
    return job({ ...ctx, redis: countingRedis(ctx.redis, invocation), budget }, config);
  };
  return job.needs ? Object.assign(run, { needs: job.needs }) : run;
}

/** The features' jobs in one map; a name two features claim is a bug, caught when the Worker loads. */
function compose(features: readonly Record<string, Job>[]): Record<string, Job> {
  const all: Record<string, Job> = {};
  for (const jobs of features) {
    for (const [name, job] of Object.entries(jobs)) {
      if (Object.hasOwn(all, name)) throw new Error(`two features declare the job '${name}'`);
      all[name] = budgeted(job);
    }
  }
  return all;
}

/** The jobs by name, for both the cron triggers and POST /internal/jobs/{job} (in this order in its 404). */
export const JOBS: Record<string, Job> = compose([
  trendingJobs,
  presenceJobs,
  countersJobs,
  leaderboardsJobs,
  histogramsJobs,
  ingestJobs,
  webhooksJobs,
]);

/** Which jobs each cron expression of wrangler.toml runs. */
export const CRON_JOBS: Record<string, string[]> = {
  // webhooks jobs run after the jobs whose results they read (compaction, the presence trim). The
  // leaderboard snapshot goes first: on the runs its day's pass has work (the first of the day) it
  // takes its LEADERBOARD_SNAPSHOT_SCRIPTS less what the later jobs need, so busy compaction and
  // deliveries never hold a large board's build to a day's leftovers (review 13); once the pass is
  // done it costs its one list script as it did last
  "5 * * * *": ["leaderboards.snapshot", "compact", "webhooks.trending", "sweep-counters"],
  "* * * * *": ["trim", "webhooks"],
};
