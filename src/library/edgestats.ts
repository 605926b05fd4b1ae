/**
 * The embeddable library: `new Edgestats({ redis, prefix })` and one handle per
 * feature. Every method builds a `Ctx` (the client, the prefix, the clock's
 * time) and calls the same functions the Worker's routes call, so the scripts,
 * the key schema and the guarantees are the service's: a library user can point
 * the service at the same database later, and the other way round.
 */
import { readConfig, type Config } from "../config.ts";
import type { Ctx } from "../context.ts";
import * as counters from "../counters/index.ts";
import * as histograms from "../histograms/index.ts";
import { SubrequestBudget, countingRedis } from "../job-budget.ts";
import type { Job } from "../jobs.ts";
import { ConfigError } from "../errors.ts";
import * as leaderboards from "../leaderboards/index.ts";
import * as presence from "../presence/index.ts";
import { madeByCreateRedis, type RedisClient } from "../redis/client.ts";
import * as trending from "../trending/index.ts";
import {
  CounterHandle,
  HistogramHandle,
  LeaderboardHandle,
  PresenceHandle,
  TrendingHandle,
  type Runtime,
} from "./handles.ts";
import { checkShape, QUERY_OPTIONS, SETTINGS, shapeIssue } from "./inputs.ts";
import { locateMethods } from "./locate.ts";

/**
 * What the library needs of a Redis client: `evalsha` and `eval` (every call is
 * one Lua script). An `@upstash/redis` `Redis` fits, e.g. `Redis.fromEnv()`.
 */
export interface EdgestatsRedis {
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  ping?(): Promise<unknown>;
}

export interface EdgestatsOptions {
  /**
   * The Redis client, e.g. `Redis.fromEnv()` from `@upstash/redis`, or
   * `createRedis({ url, token })` from this package (no automatic retries, a
   * timeout). Note: `@upstash/redis` retries a failed request up to 5 times by
   * default, so a write whose response was lost may be applied twice; pass an
   * `idempotencyKey` to writes you need exactly once, or use `createRedis`.
   */
  redis: EdgestatsRedis;
  /**
   * Prefix of every key (1-32 of `A-Z a-z 0-9 _ . -`); the service's `KEY_PREFIX`.
   * Use the service's value to share its data.
   * @default "es"
   */
  prefix?: string;
  /**
   * The current time in epoch ms, read once per call (tests pass a fake clock). A fractional value
   * (`performance.timeOrigin + performance.now()`) is floored to whole ms, as the scripts store it;
   * a value that is not a finite number, or not epoch ms of the years 2000-9999 (a clock in
   * seconds or µs), is a ConfigError from the call, before anything is sent.
   * @default Date.now
   */
  clock?: () => number;
  /**
   * Subrequests (Redis requests) one `stats.jobs.*()` call may send, as the service's
   * `SUBREQUEST_LIMIT` (30..10,000,000): a call stops before it (`more: true`, the trim's `capped`)
   * and the next goes on. On Workers Free, whose invocations fail their 51st subrequest, the jobs
   * one invocation runs share 50 (review 26: a busy hour's compaction sent up to 201). Without it a
   * job keeps only its own caps.
   * @default undefined (no limit but each job's own caps)
   */
  subrequestLimit?: number;
  /** Trending settings; the service reads them from `TRENDING_*` vars. */
  trending?: {
    /** Hours an hourly bucket lives after its hour (the widest window). @default 50 */
    retentionHours?: number;
    /** Members kept per finished hour by compaction; 0 disables trimming. @default 2400 */
    keep?: number;
    /** Scripts one compaction run may send before it stops with `more: true`. @default 100 */
    compactBatches?: number;
  };
  /** Presence settings. */
  presence?: {
    /** Seconds without a heartbeat after which an id is offline. @default 300 */
    timeoutSeconds?: number;
  };
}

/** Scripts return JSON text; a client with automatic deserialization (the default) hands back the parsed value. */
function asText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function adapt(redis: EdgestatsRedis): RedisClient {
  // createRedis's own client already answers in text; as it is, it also brings its pipeline
  if (madeByCreateRedis(redis)) return redis;
  const client = {
    evalsha: async (sha: string, keys: string[], args: string[]) => asText(await redis.evalsha(sha, keys, args)),
    eval: async (script: string, keys: string[], args: string[]) => asText(await redis.eval(script, keys, args)),
    ping: async () => String(await (redis.ping ? redis.ping() : "PONG")),
  };
  return client as unknown as RedisClient;
}

/** The service's settings from the library's options, validated by the same rules (a bad value is a ConfigError). */
function configOf(options: EdgestatsOptions): Config {
  // the settings are the deployment's, so an unknown one is a ConfigError, not the call's ValidationError
  const issue =
    shapeIssue(options, SETTINGS.edgestats, "") ??
    (options.trending === undefined ? null : shapeIssue(options.trending, SETTINGS.trending, "trending")) ??
    (options.presence === undefined ? null : shapeIssue(options.presence, SETTINGS.presence, "presence"));
  if (issue) throw new ConfigError(`Edgestats options${issue.path ? ` (${issue.path})` : ""}: ${issue.message}.`);
  // the service reads an empty KEY_PREFIX as unset: here it would silently be the default namespace
  if (options.prefix === "") throw new ConfigError("prefix must be 1-32 characters; leave it out for the default.");
  const env: Record<string, unknown> = {
    KEY_PREFIX: options.prefix,
    TRENDING_RETENTION_HOURS: options.trending?.retentionHours,
    TRENDING_KEEP: options.trending?.keep,
    TRENDING_COMPACT_BATCHES: options.trending?.compactBatches,
    PRESENCE_TIMEOUT_SECONDS: options.presence?.timeoutSeconds,
    SUBREQUEST_LIMIT: options.subrequestLimit,
  };
  return readConfig(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)));
}

/** 2000-01-01 and 10000-01-01 in epoch ms: a clock outside them is in seconds (or µs), not ms. */
const CLOCK_FLOOR = 946_684_800_000;
const CLOCK_CEILING = 253_402_300_800_000;

/**
 * The clock's time in whole epoch ms, or a ConfigError (the setting is wrong, not the call's input).
 * Checked per call, before any Redis command: a fractional time written into a leaderboard's
 * `joinedAt` made every later read of the board fail in Lua, and a NaN or fractional `now` made
 * scripts fail half-way (review 14).
 */
function timeOf(clock: () => number): number {
  const value: unknown = clock();
  if (typeof value !== "number" || !Number.isFinite(value))
    throw new ConfigError(`clock must return epoch milliseconds as a finite number; it returned ${String(value)}.`);
  const now = Math.floor(value);
  if (now < CLOCK_FLOOR || now >= CLOCK_CEILING)
    throw new ConfigError(
      `clock must return epoch milliseconds (years 2000-9999); it returned ${now}: a clock in seconds or µs?`,
    );
  return now;
}

/** A job's summary: what it did, e.g. `{ streams, hoursTrimmed, more }` for compaction. */
export type JobResult = Record<string, number | string | boolean | null>;

export class Edgestats {
  /** The effective settings (defaults filled in). */
  readonly config: Readonly<Config>;
  readonly #runtime: Runtime;
  /** Whether `subrequestLimit` was given: the jobs then run within it. */
  readonly #jobsLimited: boolean;

  constructor(options: EdgestatsOptions) {
    if (!options || typeof options.redis?.evalsha !== "function" || typeof options.redis.eval !== "function") {
      throw new TypeError(
        "new Edgestats({ redis }) needs a Redis client with evalsha and eval, e.g. Redis.fromEnv() from @upstash/redis.",
      );
    }
    const config = configOf(options);
    const redis = adapt(options.redis);
    const clock = options.clock ?? Date.now;
    this.config = Object.freeze(config);
    this.#jobsLimited = options.subrequestLimit !== undefined;
    this.#runtime = { config, ctx: (): Ctx => ({ redis, prefix: config.keyPrefix, now: timeOf(clock) }) };
  }

  /** Top N over a sliding window of hourly buckets. */
  trending(stream: string): TrendingHandle {
    return new TrendingHandle(this.#runtime, stream);
  }

  /** A named sorted-set counter, optionally bucketed by calendar period. */
  counter(name: string): CounterHandle {
    return new CounterHandle(this.#runtime, name);
  }

  /** A distribution of numeric observations with fixed-width buckets, per UTC day. */
  histogram(name: string): HistogramHandle {
    return new HistogramHandle(this.#runtime, name);
  }

  /** Who is online in a room now, with today's peak, active and new counts. */
  presence(room: string): PresenceHandle {
    return new PresenceHandle(this.#runtime, room);
  }

  /** A ranking with player profiles, pages, around-me and fair ties. */
  leaderboard(board: string): LeaderboardHandle {
    return new LeaderboardHandle(this.#runtime, board);
  }

  /** Site-wide presence: ids online across rooms (the trim job's last sample), today's peak and active ids (an estimate). */
  async presenceTotal(): Promise<presence.SiteTotal> {
    return presence.total(this.#runtime.ctx());
  }

  /** The first 1,000 trending streams (from the registry, never a scan), in byte order; `streamPage` reaches the rest. */
  async streams(): Promise<string[]> {
    return trending.list(this.#runtime.ctx());
  }

  /** A page of the trending streams in byte order (`limit` ≤ 1,000, `cursor` the previous page's `nextCursor`): `GET /v1/trending`. */
  async streamPage(options: trending.ListOptions = {}): Promise<trending.StreamsPage> {
    checkShape(options, QUERY_OPTIONS["stats.streamPage"]);
    return trending.listPage(this.#runtime.ctx(), options);
  }

  /**
   * A page of the counters with live data, with each one's last write (`limit` ≤ 1,000, `offset` the
   * previous page's `nextOffset`): `GET /v1/counters`.
   */
  async counters(options: counters.ListOptions = {}) {
    checkShape(options, QUERY_OPTIONS["stats.counters"]);
    return counters.list(this.#runtime.ctx(), options);
  }

  /** A page of the histograms holding live data (`limit` ≤ 1,000, `cursor` the previous page's `nextCursor`, or `offset` its `next`): `GET /v1/histograms`. */
  async histograms(options: histograms.ListOptions = {}) {
    checkShape(options, QUERY_OPTIONS["stats.histograms"]);
    return histograms.list(this.#runtime.ctx(), options);
  }

  /** A page of the rooms active in the last two days, most recent first (`limit` ≤ 1,000, `cursor`): `GET /v1/presence`. */
  async rooms(options: presence.ListRoomsOptions = {}): Promise<presence.RoomPage> {
    checkShape(options, QUERY_OPTIONS["stats.rooms"]);
    return presence.rooms(this.#runtime.ctx(), options);
  }

  /** A page of the boards, most recent activity first (`limit` ≤ 1,000, `cursor` or `offset`): `GET /v1/leaderboards`. */
  async boards(options: leaderboards.ListOptions = {}): Promise<leaderboards.BoardList> {
    checkShape(options, QUERY_OPTIONS["stats.boards"]);
    return leaderboards.list(this.#runtime.ctx(), options);
  }

  /**
   * The periodic jobs the service runs from cron or QStash; call them on the
   * same schedules (compact, sweepCounters and leaderboardSnapshot hourly at
   * minute 5, trim every minute). Each is bounded, idempotent and safe to
   * overlap with itself.
   */
  readonly jobs = {
    /** Hourly: trims finished trending hours to `keep` members and completes the window unions reads built before the last hour was trimmed. */
    compact: (): Promise<JobResult> => this.#run(trending.jobs, "compact"),
    /** Every minute: removes idle presence ids and samples each room's online count. */
    trim: (): Promise<JobResult> => this.#run(presence.jobs, "trim"),
    /** Hourly: frees the bucket keys of deleted counters. */
    sweepCounters: (): Promise<JobResult> => this.#run(counters.jobs, "sweep-counters"),
    /** Hourly (acts once per UTC day): the snapshot `previousRank` reads on boards without seasons. */
    leaderboardSnapshot: (): Promise<JobResult> => this.#run(leaderboards.jobs, "leaderboards.snapshot"),
  };

  /** Runs a feature's job by its served name (the same the cron triggers use). */
  async #run(jobs: Record<string, Job>, name: string): Promise<JobResult> {
    const job = jobs[name];
    if (!job) throw new Error(`no job '${name}'`);
    const ctx = this.#runtime.ctx();
    if (!this.#jobsLimited) return job(ctx, this.#runtime.config);
    // each call is its own invocation, as a POST /internal/jobs call is (functions/jobs.ts)
    const invocation = new SubrequestBudget(this.#runtime.config.subrequestLimit);
    const budget = invocation.allowance(invocation.limit, job.needs ?? 0);
    return job({ ...ctx, redis: countingRedis(ctx.redis, invocation), budget }, this.#runtime.config);
  }
}

// Edgestats' own reads are the list routes' (GET /v1/trending, /v1/counters, …): their options are the query.
locateMethods(Edgestats, {
  presenceTotal: ["query"],
  streams: ["query"],
  streamPage: ["query"],
  counters: ["query"],
  histograms: ["query"],
  rooms: ["query"],
  boards: ["query"],
});
