/**
 * Redis losing its script cache (a failover, a restart: SCRIPT FLUSH) at a chosen request of a
 * client, for the tests of the jobs' subrequest budget (src/job-budget.ts), and one job run in an
 * invocation of its own, counted.
 */
import type { Config } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { SubrequestBudget, countingRedis } from "../../src/job-budget.ts";
import type { Job, JobResult } from "../../src/jobs.ts";
import type { RedisClient, RedisPipeline } from "../../src/redis/client.ts";

/**
 * `real`, with `before(n)` awaited before its n-th HTTP request (1-based: an EVALSHA, an EVAL or a
 * pipeline's exec). One object for its life: the isolate's memory of loaded scripts is keyed by it.
 */
export function hooked(real: RedisClient) {
  let n = 0;
  let before: (n: number) => Promise<void> = async () => {};
  const pre = async () => before(++n);
  const client: RedisClient = {
    evalsha: (async (...args: Parameters<RedisClient["evalsha"]>) => {
      await pre();
      return real.evalsha(...args);
    }) as RedisClient["evalsha"],
    eval: (async (...args: Parameters<RedisClient["eval"]>) => {
      await pre();
      return real.eval(...args);
    }) as RedisClient["eval"],
    ping: (async (...args: Parameters<RedisClient["ping"]>) => {
      await pre();
      return real.ping(...args);
    }) as RedisClient["ping"],
    pipeline: (() => {
      const p = (real.pipeline as () => RedisPipeline)();
      const exec = p.exec.bind(p);
      p.exec = (async (...args: Parameters<RedisPipeline["exec"]>) => {
        await pre();
        return exec(...args);
      }) as RedisPipeline["exec"];
      return p;
    }) as RedisClient["pipeline"],
  };
  return {
    client,
    /** Runs `hook` before each request from now on, counting from 1 again. */
    on(hook: (n: number) => Promise<void>) {
      n = 0;
      before = hook;
    },
  };
}

export interface CountedRun {
  /** The job's result, or `{ thrown: "<name>: <message>" }` when it threw. */
  result: JobResult;
  used: number;
  reloads: number;
}

/**
 * `job` run as the only job of an invocation of `limit` subrequests (as POST /internal/jobs runs
 * one), through a counting client on `client`, in `ctx`'s prefix and clock.
 */
export async function runCounted(job: Job, client: RedisClient, ctx: Ctx, config: Config, limit: number) {
  const invocation = new SubrequestBudget(limit);
  const redis = countingRedis(client, invocation);
  const budget = invocation.allowance(invocation.limit, job.needs ?? 0);
  const result = await job({ ...ctx, redis, budget }, config).catch((e: unknown): JobResult => ({
    thrown: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
  }));
  return { result, used: invocation.used, reloads: invocation.reloads } satisfies CountedRun;
}
