import type { Config } from "./config.ts";
import type { Ctx } from "./context.ts";
import type { JobBudget } from "./job-budget.ts";

/**
 * What a job runs with: the library's context, and its share of the invocation's subrequests
 * (src/job-budget.ts). Without `budget` (a library user's own call) a job keeps only its own caps.
 */
export interface JobCtx extends Ctx {
  budget?: JobBudget | undefined;
}

/** A job's result: flat figures (`more: true` when a bounded run left work for the next). */
export type JobResult = Record<string, number | string | boolean | null>;

/** A periodic job: bounded work, idempotent, safe to overlap with another run of itself. */
export type Job = ((ctx: JobCtx, config: Config) => Promise<JobResult>) & {
  /**
   * What the job needs of an invocation's subrequests: `scripts`, the distinct scripts it sends
   * (each may be answered NOSCRIPT once and re-sent), and `least`, the subrequests of its smallest
   * run that makes progress (the webhooks jobs: and a few deliveries more). The scheduler keeps `scripts + least` back for each job after the one
   * running, so a busy job early in a cron never starves the later ones.
   */
  needs?: { scripts: number; least: number };
};

/** `job` with its subrequest needs attached (see `Job.needs`). */
export function withNeeds(
  job: (ctx: JobCtx, config: Config) => Promise<JobResult>,
  needs: { scripts: number; least: number },
): Job {
  return Object.assign(job, { needs });
}

/** Subrequests the job may still plan: its allowance's, or unbounded without one. */
export function leftOf(ctx: JobCtx): number {
  return ctx.budget ? ctx.budget.left() : Number.POSITIVE_INFINITY;
}

/**
 * The result of a job that did not start: its allowance could not pay its smallest step. Its work
 * waits, untouched, for the next run (a cron's allowances never come to this: the scheduler keeps
 * each job's `needs` back and SUBREQUEST_LIMIT's least value pays them all).
 */
export function deferred(): JobResult {
  return { deferred: true };
}

/**
 * Subrequests the job may still send of the plan it made against `leftOf`: `JobBudget.planned`
 * (the invocation's spare for one lost script cache counted in), or unbounded without a budget. A
 * job that planned its steps up front reads it before each later step and stops (its `more: true`,
 * or `capped`) when it no longer pays the step: Redis lost its scripts a second time in the
 * invocation (one unplanned re-send each), and the plan is a step short (review 15).
 */
export function plannedOf(ctx: JobCtx): number {
  return ctx.budget ? ctx.budget.planned() : Number.POSITIVE_INFINITY;
}

/**
 * Runs a job's steps; a step refused unsent at the invocation's limit (a SubrequestBudgetSpent:
 * a lost script cache re-sent in the very step `plannedOf` said it paid) ends them with
 * `stopped()` instead: nothing of that step ran, so the job's figures so far stand and the next
 * run goes on where it stopped. The one way a job stops early (compaction, the snapshot, the
 * trim, the sweep, the deliveries).
 */
export async function untilSpent<T>(steps: () => Promise<T>, stopped: () => T): Promise<T> {
  try {
    return await steps();
  } catch (error) {
    // by name, as src/redis/run.ts tells it: this module imports no runtime code
    if (!(error instanceof Error) || error.name !== "SubrequestBudgetSpent") throw error;
    return stopped();
  }
}
