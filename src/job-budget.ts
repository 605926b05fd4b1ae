import type { RedisClient, RedisPipeline } from "./redis/client.ts";

/**
 * The subrequests of one invocation (a cron trigger, or one POST /internal/jobs call), shared by
 * the jobs it runs. Cloudflare counts every outgoing fetch of an invocation (each Upstash REST
 * call, each webhook delivery or QStash publish) and fails the one past its plan's limit (50 on
 * the free plan, 10,000 on the paid plan): a job cut off there stops half way. So every subrequest
 * of the jobs goes through this count (`countingRedis`, `fetch`), and each job plans its steps
 * against what its allowance leaves (`JobBudget.left`), stopping with its own `more: true` (or
 * `capped`) before the limit, never at it.
 */
export class SubrequestBudget {
  /** Subrequests sent so far. */
  used = 0;
  /** Scripts re-sent with EVAL after a NOSCRIPT answer (one extra subrequest each). */
  reloads = 0;

  /** Subrequests the invocation may send. */
  readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  /**
   * Counts one subrequest about to be sent. Past the limit it throws instead of sending (the
   * counted calls reject): the platform would refuse it anyway, and a job that planned within its
   * allowance never gets here.
   */
  spend(): void {
    if (this.used >= this.limit) {
      throw new Error(`subrequest budget of ${this.limit} spent (a job sent more than it planned)`);
    }
    this.used++;
  }

  /** The jobs' fetch (webhook deliveries, QStash publishes), counted. */
  readonly fetch: typeof fetch = async (input, init) => {
    this.spend();
    return fetch(input, init);
  };

  /**
   * What one job may spend: up to `cap` subrequests of the invocation in all (what the jobs after
   * it need is kept back by the caller), less one for each of its `scripts` that may still be
   * answered NOSCRIPT and re-sent.
   */
  allowance(cap: number, scripts: number): JobBudget {
    return new JobBudget(this, Math.min(cap, this.limit), scripts);
  }
}

/** A job's share of its invocation's subrequests (`ctx.budget`). */
export class JobBudget {
  private readonly invocation: SubrequestBudget;
  /** The invocation's count this job may reach. */
  private readonly cap: number;
  /** Distinct scripts the job sends: each may cost one EVAL more, once, after a NOSCRIPT answer. */
  private readonly scripts: number;
  private readonly reloadsAtStart: number;

  constructor(invocation: SubrequestBudget, cap: number, scripts: number) {
    this.invocation = invocation;
    this.cap = cap;
    this.scripts = scripts;
    this.reloadsAtStart = invocation.reloads;
  }

  /** Subrequests the job may still plan, with its possible re-sends kept aside; never below 0. */
  left(): number {
    const reloadsLeft = Math.max(0, this.scripts - (this.invocation.reloads - this.reloadsAtStart));
    return Math.max(0, this.cap - this.invocation.used - reloadsLeft);
  }

  /** The counted fetch of the invocation. */
  get fetch(): typeof fetch {
    return this.invocation.fetch;
  }
}

/**
 * The client `redis` with every HTTP request it sends counted in `budget`: EVALSHA, EVAL (only
 * sent after a NOSCRIPT answer: counted as a reload too), PING and each pipeline's exec. It sends
 * exactly what `redis` would: the jobs' command counts (docs/costs.md) do not change. (A pipeline
 * re-sent with EVAL after NOSCRIPT is counted, but not as a reload: no job sends a pipeline.)
 */
export function countingRedis(redis: RedisClient, budget: SubrequestBudget): RedisClient {
  const counted: RedisClient = {
    evalsha: (async (...args: Parameters<RedisClient["evalsha"]>) => {
      budget.spend();
      return redis.evalsha(...args);
    }) as RedisClient["evalsha"],
    eval: (async (...args: Parameters<RedisClient["eval"]>) => {
      budget.spend();
      budget.reloads++;
      return redis.eval(...args);
    }) as RedisClient["eval"],
    ping: (async (...args: Parameters<RedisClient["ping"]>) => {
      budget.spend();
      return redis.ping(...args);
    }) as RedisClient["ping"],
  };
  const pipeline = redis.pipeline?.bind(redis);
  if (pipeline) {
    counted.pipeline = (() => {
      const p = pipeline() as RedisPipeline;
      const exec = p.exec.bind(p);
      p.exec = (async (...args: Parameters<RedisPipeline["exec"]>) => {
        budget.spend();
        return exec(...args);
      }) as RedisPipeline["exec"];
      return p;
    }) as RedisClient["pipeline"];
  }
  return counted;
}
