import { readConfig } from "../src/config.ts";
import { SubrequestBudget, countingRedis } from "../src/job-budget.ts";
import { redactError } from "./errors.ts";
import type { JobResult } from "../src/jobs.ts";
import { CRON_JOBS, JOBS, needsOf } from "./jobs.ts";
import { redisOf } from "./middleware/context.ts";

/**
 * Runs the jobs of one cron trigger; each job's failure is logged and does not stop the others.
 * The jobs share the invocation's subrequests (SUBREQUEST_LIMIT, src/job-budget.ts): each may
 * spend what is left less what the jobs after it need to make progress (`Job.needs`), and stops
 * with `more: true` (or `capped`) when that runs out; the next run goes on. Then each job that
 * answered `more: true` (or `capped`) having spent its share (not stopped by its own cap) gets one more turn,
 * in order, with what the jobs after it left unused (review 13: an idle later job's kept-back
 * share was lost to compaction); its result is both turns' figures summed.
 */
export async function runScheduled(cron: string, scheduledTime: number, env: Env): Promise<Record<string, unknown>> {
  return (await runScheduledCounted(cron, scheduledTime, env)).results;
}

/**
 * The `scheduled` entry's run (functions/index.ts): `runScheduled`, then, when a job failed, a
 * rejection naming each failed job, so Cloudflare records the invocation as failed (Cron Events, a
 * Tail Worker, Logpush) instead of "ok" while a job fails every hour (review 19). Every job has run
 * by then, and the work of those that did not fail stands.
 */
export async function runTrigger(cron: string, scheduledTime: number, env: Env): Promise<Record<string, unknown>> {
  // A trigger CRON_JOBS does not map (wrangler.toml's crons moved without functions/jobs.ts) would
  // run no job and be recorded "ok" every time: fail it, naming the expressions that run jobs (review 22)
  if (!Object.hasOwn(CRON_JOBS, cron))
    throw new Error(
      `scheduled ${cron}: no jobs for this cron expression; CRON_JOBS (functions/jobs.ts) maps ` +
        Object.keys(CRON_JOBS)
          .map((c) => `"${c}"`)
          .join(", "),
    );
  const results = await runScheduled(cron, scheduledTime, env);
  const failed = Object.entries(results).filter(([, r]) => typeof (r as JobResult).error === "string");
  if (failed.length > 0)
    throw new Error(
      `scheduled ${cron}: ${failed.length} of ${Object.keys(results).length} jobs failed: ` +
        failed.map(([name, r]) => `${name} (${String((r as JobResult).error)})`).join("; "),
    );
  return results;
}

/** `runScheduled`, with the subrequests the jobs sent (Redis calls and deliveries). */
export async function runScheduledCounted(
  cron: string,
  scheduledTime: number,
  env: Env,
  clock: () => number = Date.now,
): Promise<{
  results: Record<string, unknown>;
  subrequests: number;
  limit: number;
  /** EVALs re-sent after NOSCRIPT, and scripts loaded again with one after Redis lost its scripts. */
  reloads: number;
  loadedAgain: number;
}> {
  const config = readConfig(env as unknown as Record<string, unknown>);
  // the wall clock: past JOB_TIME_MS of it no job starts a step (src/job-budget.ts)
  const invocation = new SubrequestBudget(config.subrequestLimit, clock);
  const redis = countingRedis(redisOf(env, config.jobRedisTimeoutMs), invocation);
  const results: Record<string, unknown> = {};
  const names = (CRON_JOBS[cron] ?? []).filter((name) => Object.hasOwn(JOBS, name));
  const run = async (name: string, cap: number): Promise<JobResult> => {
    const job = JOBS[name]!;
    const budget = invocation.allowance(cap, job.needs ?? 0);
    try {
      const result = await job({ redis, prefix: config.keyPrefix, now: scheduledTime, budget }, config);
      // cut short by its share, not by its own cap: what is left cannot pay its smallest step. The
      // trim says so with `capped` (review 19: without a second turn, the rooms past its share lost
      // the minute's point while the idle webhooks job left its kept-back share unused)
      const cut = result.more === true || result.capped === true;
      if (cut && budget.left() < needsOf(job, invocation)) short.add(name);
      return result;
    } catch (error) {
      // Redacted: an Upstash error echoes every argument of the failed command.
      const logged = redactError(error);
      console.error(`scheduled job ${name} failed: ${logged}`);
      return { error: logged.split("\n")[0] ?? "" };
    }
  };
  const short = new Set<string>();
  for (const [i, name] of names.entries()) {
    const later = names.slice(i + 1).reduce((sum, next) => sum + needsOf(JOBS[next]!, invocation), 0);
    results[name] = await run(name, invocation.limit - later);
  }
  for (const name of names.filter((n) => short.has(n))) {
    // one more turn only when what is left pays more than the job's reloads and smallest step
    if (invocation.limit - invocation.used - invocation.kept < needsOf(JOBS[name]!, invocation) + 1) continue;
    short.delete(name);
    const more = await run(name, invocation.limit);
    if (more.deferred === true) continue;
    results[name] = summed(results[name] as JobResult, more);
  }
  return {
    results,
    subrequests: invocation.used,
    limit: invocation.limit,
    reloads: invocation.reloads,
    loadedAgain: invocation.loadedAgain,
  };
}

/**
 * Figures a second turn states again rather than adds to: the trim's minute, and its site-wide
 * sample (the second turn's is the sum of every room's last count, the first turn's rooms included;
 * none taken in it, the first turn's stands).
 */
const RESTATED = new Set(["minute", "siteOnline"]);

/** Two turns' results as one: figures added, the rest (`more`, `capped`, an error, RESTATED) as the second says. */
function summed(first: JobResult, second: JobResult): JobResult {
  const out: JobResult = { ...first };
  for (const [k, v] of Object.entries(second)) {
    const before = out[k];
    // a second turn that took no sample (null) leaves the first turn's
    if (RESTATED.has(k)) out[k] = v ?? before ?? null;
    else out[k] = typeof v === "number" && typeof before === "number" ? before + v : v;
  }
  return out;
}
