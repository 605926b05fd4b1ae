import { readConfig } from "../src/config.ts";
import { SubrequestBudget, countingRedis } from "../src/job-budget.ts";
import { redactError } from "./errors.ts";
import { CRON_JOBS, JOBS, needsOf } from "./jobs.ts";
import { redisOf } from "./middleware/context.ts";

/**
 * Runs the jobs of one cron trigger; each job's failure is logged and does not stop the others.
 * The jobs share the invocation's subrequests (SUBREQUEST_LIMIT, src/job-budget.ts): each may
 * spend what is left less what the jobs after it need to make progress (`Job.needs`), and stops
 * with `more: true` (or `capped`) when that runs out; the next run goes on.
 */
export async function runScheduled(cron: string, scheduledTime: number, env: Env): Promise<Record<string, unknown>> {
  return (await runScheduledCounted(cron, scheduledTime, env)).results;
}

/** `runScheduled`, with the subrequests the jobs sent (Redis calls and deliveries). */
export async function runScheduledCounted(
  cron: string,
  scheduledTime: number,
  env: Env,
): Promise<{ results: Record<string, unknown>; subrequests: number; limit: number }> {
  const config = readConfig(env as unknown as Record<string, unknown>);
  const invocation = new SubrequestBudget(config.subrequestLimit);
  const redis = countingRedis(redisOf(env, config.jobRedisTimeoutMs), invocation);
  const results: Record<string, unknown> = {};
  const names = (CRON_JOBS[cron] ?? []).filter((name) => Object.hasOwn(JOBS, name));
  for (const [i, name] of names.entries()) {
    const job = JOBS[name]!;
    const later = names.slice(i + 1).reduce((sum, next) => sum + needsOf(JOBS[next]!), 0);
    const budget = invocation.allowance(invocation.limit - later, job.needs?.scripts ?? 0);
    try {
      results[name] = await job({ redis, prefix: config.keyPrefix, now: scheduledTime, budget }, config);
    } catch (error) {
      // Redacted: an Upstash error echoes every argument of the failed command.
      const logged = redactError(error);
      console.error(`scheduled job ${name} failed: ${logged}`);
      results[name] = { error: logged.split("\n")[0] };
    }
  }
  return { results, subrequests: invocation.used, limit: invocation.limit };
}
