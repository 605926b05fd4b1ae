import { readConfig } from "../src/config.ts";
import { redactError } from "./errors.ts";
import { CRON_JOBS, JOBS } from "./jobs.ts";
import { redisOf } from "./middleware/context.ts";

/** Runs the jobs of one cron trigger; each job's failure is logged and does not stop the others. */
export async function runScheduled(cron: string, scheduledTime: number, env: Env): Promise<Record<string, unknown>> {
  const config = readConfig(env as unknown as Record<string, unknown>);
  const redis = redisOf(env, config.jobRedisTimeoutMs);
  const ctx = { redis, prefix: config.keyPrefix, now: scheduledTime };
  const results: Record<string, unknown> = {};
  for (const name of CRON_JOBS[cron] ?? []) {
    const job = JOBS[name];
    if (!job) continue;
    try {
      results[name] = await job(ctx, config);
    } catch (error) {
      // Redacted: an Upstash error echoes every argument of the failed command.
      const logged = redactError(error);
      console.error(`scheduled job ${name} failed: ${logged}`);
      results[name] = { error: logged.split("\n")[0] };
    }
  }
  return results;
}
