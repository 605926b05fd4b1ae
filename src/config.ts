import { ConfigError } from "./errors.ts";

/** Deployment settings, read from Worker vars (see wrangler.toml) with these defaults. */
export interface Config {
  /** @default "es" */
  keyPrefix: string;
  /** Hours an hourly trending bucket lives after its hour. @default 50 */
  trendingRetentionHours: number;
  /** Members kept per finished hour by compaction (max(240, 24 × the largest n of 100), as source post 000 reasons, docs/background.md); 0 disables trimming. @default 2400 */
  trendingKeep: number;
  /**
   * Scripts (20 streams each, two subrequests) one compaction run may send before it stops with
   * `more: true`; fewer when the invocation's subrequest budget (`subrequestLimit`) runs short.
   * @default 100
   */
  trendingCompactBatches: number;
  /** Seconds a top-N answer may be served from the Workers cache; 0 = off. @default 5 */
  trendingCacheSeconds: number;
  /** Seconds without a heartbeat after which an id is offline. @default 300 */
  presenceTimeoutSeconds: number;
  /**
   * Days without a heartbeat after which presence forgets an id (its mapping goes; back, it counts as new).
   * At least 2: a forgotten id then has no bit in any daily bitmap still kept. @default 90
   */
  presenceIdHorizonDays: number;
  /** Milliseconds to wait for Redis before a 503. @default 3000 */
  redisTimeoutMs: number;
  /**
   * Milliseconds a job (cron or POST /internal/jobs) waits for one Redis script: jobs run many
   * short scripts, but a slow database must not cut one off half way as an API call would. @default 25000
   */
  jobRedisTimeoutMs: number;
  /** Requests per API key per 10 s; 0 = no rate limit. @default 0 */
  rateLimitPer10s: number;
  /** Ranking members one leaderboard snapshot script copies at most (on the bench machine ~20 ms at 5,000 on a 1M-player board; 10,000 took 37 ms, up to 58 ms under load: over issue 15's 50 ms). @default 5000 */
  leaderboardSnapshotChunk: number;
  /** Scripts one `leaderboards.snapshot` run may send before it stops with `more: true`. @default 40 */
  leaderboardSnapshotScripts: number;
  /**
   * Subrequests one invocation of the jobs (a cron trigger, or one POST /internal/jobs call) may
   * send in all, shared by its jobs (src/job-budget.ts): Cloudflare's per-invocation limit of the
   * plan, 10,000 on Workers Paid; set 50 on Workers Free. At least 30: what the jobs of the
   * hourly trigger keep back for each other (27). @default 10000
   */
  subrequestLimit: number;
  /** QStash token (secret QSTASH_TOKEN): webhooks are published through QStash when set; "" = direct delivery. @default "" */
  qstashToken: string;
  /** QStash's API (QSTASH_URL). @default "https://qstash.upstash.io" */
  qstashUrl: string;
  /** Accept `http://` webhook URLs on localhost / 127.0.0.1 (WEBHOOKS_ALLOW_LOCAL_HTTP=true; development and tests only). @default false */
  webhooksAllowLocalHttp: boolean;
}

function int(env: Record<string, unknown>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}; it is '${String(raw)}'.`);
  }
  return value;
}

function flag(env: Record<string, unknown>, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "" || raw === "false" || raw === false) return false;
  if (raw === "true" || raw === true) return true;
  throw new ConfigError(`${name} must be true or false; it is '${String(raw)}'.`);
}

export function readConfig(env: Record<string, unknown>): Config {
  const keyPrefix = env.KEY_PREFIX === undefined || env.KEY_PREFIX === "" ? "es" : String(env.KEY_PREFIX);
  if (!/^[A-Za-z0-9_.-]{1,32}$/.test(keyPrefix)) {
    throw new ConfigError("KEY_PREFIX must be 1-32 characters of A-Z a-z 0-9 _ . -.");
  }
  return {
    keyPrefix,
    trendingRetentionHours: int(env, "TRENDING_RETENTION_HOURS", 50, 2, 24 * 400),
    trendingKeep: int(env, "TRENDING_KEEP", 2400, 0, 1_000_000),
    trendingCompactBatches: int(env, "TRENDING_COMPACT_BATCHES", 100, 1, 1000),
    trendingCacheSeconds: int(env, "TRENDING_CACHE_SECONDS", 5, 0, 3600),
    presenceTimeoutSeconds: int(env, "PRESENCE_TIMEOUT_SECONDS", 300, 5, 86400),
    presenceIdHorizonDays: int(env, "PRESENCE_ID_HORIZON_DAYS", 90, 2, 3650),
    redisTimeoutMs: int(env, "REDIS_TIMEOUT_MS", 3000, 100, 60_000),
    jobRedisTimeoutMs: int(env, "JOB_REDIS_TIMEOUT_MS", 25_000, 100, 300_000),
    rateLimitPer10s: int(env, "RATE_LIMIT_PER_10S", 0, 0, 1_000_000),
    leaderboardSnapshotChunk: int(env, "LEADERBOARD_SNAPSHOT_CHUNK", 5_000, 1, 10_000),
    leaderboardSnapshotScripts: int(env, "LEADERBOARD_SNAPSHOT_SCRIPTS", 40, 2, 1000),
    subrequestLimit: int(env, "SUBREQUEST_LIMIT", 10_000, 30, 10_000_000),
    qstashToken: typeof env.QSTASH_TOKEN === "string" ? env.QSTASH_TOKEN : "",
    qstashUrl:
      typeof env.QSTASH_URL === "string" && env.QSTASH_URL !== "" ? env.QSTASH_URL : "https://qstash.upstash.io",
    webhooksAllowLocalHttp: flag(env, "WEBHOOKS_ALLOW_LOCAL_HTTP"),
  };
}
