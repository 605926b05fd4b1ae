import { UpstashError } from "./redis/http.ts";
import type { RedisClient, RedisPipeline } from "./redis/client.ts";
import { forgetLoaded, loadClock, loadedAt, shareLoaded, takeLost } from "./redis/loaded.ts";
import type { Script } from "./redis/script.ts";

/**
 * The subrequests of one invocation (a cron trigger, or one POST /internal/jobs call), shared by
 * the jobs it runs. Cloudflare counts every outgoing fetch of an invocation (each Upstash REST
 * call, each webhook delivery or QStash publish) and fails the one past its plan's limit (50 on
 * the free plan, 10,000 on the paid plan): a job cut off there stops half way. So every subrequest
 * of the jobs goes through this count (`countingRedis`, `fetch`), and each job plans its steps
 * against what its allowance leaves (`JobBudget.left`), stopping with its own `more: true` (or
 * `capped`) before the limit, never at it.
 */
/**
 * Wall-clock time an invocation starts jobs' steps in (20 s): past it each job stops at its next
 * step as when short of subrequests (`more: true`, `capped`, deliveries left due), so a slow Redis
 * (a step of many seconds) cannot run the jobs into the platform's end of the invocation (30 s for
 * a cron run more often than hourly) half way through a step; the rest is the step under way's.
 */
export const JOB_TIME_MS = 20_000;

export class SubrequestBudget {
  /** Subrequests sent so far. */
  used = 0;
  /** Scripts re-sent with EVAL after a NOSCRIPT answer (one extra subrequest each). */
  reloads = 0;
  /** Scripts loaded again (SCRIPT LOAD) with a re-send after Redis lost its scripts (`countingRedis`). */
  loadedAgain = 0;

  /** Subrequests the invocation may send. */
  readonly limit: number;

  /** The counting client (`countingRedis`), whose scripts src/redis/loaded.ts remembers. */
  client: object | undefined;
  /** Whether the client can load a lost cache again in one request (it has a pipeline). */
  canReload = false;
  /** The job sending now: the scripts sent through `client` are added to its set. */
  current: Set<string> | undefined;
  /** The memory's clock when the invocation began: a script noted loaded since, it saw loaded itself. */
  private readonly startedAt = loadClock();
  /**
   * 1 once a plan counted on a script believed loaded before the invocation (and 0 before): the
   * one re-send, unplanned, that a lost script cache then costs (the re-send loads the others
   * again: `countingRedis`), kept aside from every job's plan for the rest of the invocation.
   */
  private spare = 0;

  /**
   * The wall clock (epoch ms), when given (the cron's invocations: functions/scheduled.ts), and when
   * the invocation's JOB_TIME_MS are up by it.
   */
  private readonly clock: (() => number) | undefined;
  private readonly until: number;

  constructor(limit: number, clock?: () => number) {
    this.limit = limit;
    this.clock = clock;
    this.until = clock ? clock() + JOB_TIME_MS : Infinity;
  }

  /** Whether the invocation's JOB_TIME_MS are up: every job's `left()` and `planned()` then read 0. */
  get late(): boolean {
    return !!this.clock && this.clock() >= this.until;
  }

  /**
   * Counts one subrequest about to be sent. Past the limit it throws SubrequestBudgetSpent instead
   * of sending (the counted calls reject; src/redis/run.ts passes it on as it is, not as an
   * outage): the platform would refuse it anyway, and a job that planned within its allowance, and
   * reads `left()` again before each step, never gets here.
   */
  spend(): void {
    if (this.used >= this.limit) throw new SubrequestBudgetSpent(this.limit);
    this.used++;
  }

  /** The jobs' fetch (webhook deliveries, QStash publishes), counted. */
  readonly fetch: typeof fetch = async (input, init) => {
    this.spend();
    return fetch(input, init);
  };

  /**
   * What one job may spend: up to `cap` subrequests of the invocation in all (what the jobs after
   * it need is kept back by the caller), less one for each of its scripts that may still be
   * answered NOSCRIPT and re-sent (`reserveOf`). `needs` is the job's `needs` (its `scripts`, and
   * the object the isolate remembers its scripts by) or a bare count (nothing remembered).
   */
  allowance(cap: number, needs: number | { readonly scripts: number }): JobBudget {
    const sent = typeof needs === "number" ? new Set<string>() : sentOf(needs);
    this.current = sent;
    return new JobBudget(this, Math.min(cap, this.limit), typeof needs === "number" ? needs : needs.scripts, sent);
  }

  /** What a job (its `needs`) must have kept back to make progress: its reserve and `least`. */
  needsOf(needs: { readonly scripts: number; readonly least: number } | undefined): number {
    return needs ? this.reserveOf(needs.scripts, sentOf(needs)) + needs.least : 0;
  }

  /**
   * Re-sends to keep in reserve for a job of `scripts` distinct scripts that was seen sending
   * `sent`: one per script not believed loaded (src/redis/loaded.ts). A script seen loaded during
   * this invocation counts as loaded (as a script re-sent once did before); one believed loaded
   * from before counts only when a lost cache can be loaded again in one request, and then holds
   * the invocation's `spare`.
   */
  reserveOf(scripts: number, sent: ReadonlySet<string>): number {
    if (!this.client) return scripts;
    let loaded = 0;
    for (const sha of sent) {
      const at = loadedAt(this.client, sha);
      if (at === undefined) continue;
      if (at > this.startedAt) loaded++;
      else if (this.canReload) {
        loaded++;
        this.spare = 1;
      }
    }
    return Math.max(0, scripts - loaded);
  }

  /** Subrequests kept aside from every plan for one unplanned re-send (`spare`). */
  get kept(): number {
    return this.spare;
  }
}

/** A subrequest refused unsent: the invocation's budget (`SUBREQUEST_LIMIT`) was spent. A bug, not an outage. */
export class SubrequestBudgetSpent extends Error {
  constructor(limit: number) {
    super(`subrequest budget of ${limit} spent: a job sent more than it planned (the request was not sent)`);
    // by name: src/redis/run.ts tells it from a storage outage without importing this module
    this.name = "SubrequestBudgetSpent";
  }
}

/**
 * Per isolate: the scripts (SHA-1) each job was seen sending, by its `needs` object (the same for
 * the cron's run and POST /internal/jobs). A job sends at most `needs.scripts` distinct scripts.
 */
const sentByJob = new WeakMap<object, Set<string>>();

function sentOf(needs: object): Set<string> {
  let sent = sentByJob.get(needs);
  if (!sent) {
    sent = new Set();
    sentByJob.set(needs, sent);
  }
  return sent;
}

/** A job's share of its invocation's subrequests (`ctx.budget`). */
export class JobBudget {
  private readonly invocation: SubrequestBudget;
  /** The invocation's count this job may reach. */
  private readonly cap: number;
  /** Distinct scripts the job sends: each may cost one EVAL more after a NOSCRIPT answer. */
  private readonly scripts: number;
  /** The scripts it was seen sending (in this isolate, when its `needs` was given). */
  private readonly sent: ReadonlySet<string>;

  constructor(invocation: SubrequestBudget, cap: number, scripts: number, sent: ReadonlySet<string>) {
    this.invocation = invocation;
    this.cap = cap;
    this.scripts = scripts;
    this.sent = sent;
  }

  /** Subrequests the job may still plan, with its possible re-sends kept aside; never below 0. */
  left(): number {
    if (this.invocation.late) return 0;
    const reserve = this.invocation.reserveOf(this.scripts, this.sent);
    return Math.max(0, this.cap - this.invocation.used - reserve - this.invocation.kept);
  }

  /**
   * What the job may still send of a plan made against `left()`: `left()` with the invocation's
   * spare counted in (the plan counts on the spare for one lost script cache). A job that planned
   * its steps up front reads it before each step: a second loss, one more unplanned re-send, then
   * stops it a step early (`more: true`) rather than at the limit (review 15).
   */
  planned(): number {
    if (this.invocation.late) return 0;
    const reserve = this.invocation.reserveOf(this.scripts, this.sent);
    return Math.max(0, this.cap - this.invocation.used - reserve);
  }

  /** The counted fetch of the invocation. */
  get fetch(): typeof fetch {
    return this.invocation.fetch;
  }
}

/**
 * The client `redis` with every HTTP request it sends counted in `budget`: EVALSHA, EVAL (only
 * sent after a NOSCRIPT answer: counted as a reload too), PING and each pipeline's exec. It sends
 * exactly what `redis` would (the jobs' command counts, docs/costs.md, do not change), but for one
 * case: after Redis answered NOSCRIPT for a script believed loaded (a SCRIPT FLUSH, a failover:
 * src/redis/loaded.ts), the next re-send (an EVAL, or a pipeline) also carries a SCRIPT LOAD of
 * each other script believed loaded, in the same request, so the plans that counted on them hold:
 * the lost cache costs the invocation one subrequest (its `spare`), not one per script.
 */
export function countingRedis(redis: RedisClient, budget: SubrequestBudget): RedisClient {
  const pipelineOf = redis.pipeline?.bind(redis);
  const counted: RedisClient = {
    evalsha: (async (...args: Parameters<RedisClient["evalsha"]>) => {
      budget.spend();
      return redis.evalsha(...args);
    }) as RedisClient["evalsha"],
    eval: (async (...args: Parameters<RedisClient["eval"]>) => {
      budget.spend();
      budget.reloads++;
      const lost = pipelineOf ? takeLost(counted) : [];
      if (lost.length === 0 || !pipelineOf) return redis.eval(...args);
      const p = pipelineOf();
      p.eval(...args);
      const replies = await execWithLoads(p, lost, { keepErrors: true });
      const reply = replies[0] as { error?: string; result: unknown };
      if (reply.error) throw new UpstashError(reply.error);
      return reply.result;
    }) as RedisClient["eval"],
    ping: (async (...args: Parameters<RedisClient["ping"]>) => {
      budget.spend();
      return redis.ping(...args);
    }) as RedisClient["ping"],
  };
  if (pipelineOf) {
    counted.pipeline = (() => {
      const p = pipelineOf();
      const exec = p.exec.bind(p);
      p.exec = (async (...args: Parameters<RedisPipeline["exec"]>) => {
        budget.spend();
        // the loads' replies are read only as `{ error, result }` (run.ts sends every pipeline so)
        const keep = (args[0] as { keepErrors?: boolean } | undefined)?.keepErrors === true;
        const lost = keep ? takeLost(counted) : [];
        if (lost.length === 0) return exec(...args);
        return execWithLoads(p, lost, args[0], exec);
      }) as RedisPipeline["exec"];
      return p;
    }) as RedisClient["pipeline"];
  }
  /** Sends `p` with a SCRIPT LOAD of each `lost` script after its commands; returns its commands' replies. */
  async function execWithLoads(
    p: RedisPipeline,
    lost: { sha: string; script: Script }[],
    options: unknown,
    exec: RedisPipeline["exec"] = p.exec.bind(p),
  ): Promise<unknown[]> {
    for (const { script } of lost) p.scriptLoad(script.text);
    const replies = (await (exec as (o: unknown) => Promise<unknown[]>)(options)) as {
      error?: string;
      result: unknown;
    }[];
    const loads = replies.splice(replies.length - lost.length);
    budget.loadedAgain += lost.length;
    loads.forEach((load, i) => {
      if (load.error) forgetLoaded(counted, lost[i]!.sha);
    });
    return replies;
  }
  shareLoaded(counted, redis, (sha) => budget.current?.add(sha));
  budget.client = counted;
  budget.canReload = pipelineOf !== undefined;
  return counted;
}
