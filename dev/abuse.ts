/**
 * The abuse run (issue 12): each scope sends its worst requests at the real
 * Worker (`wrangler dev`) for a while, then we check what a user of the
 * service cares about:
 *
 * - no acknowledged write was lost (an ingest key's `ttl: 1` or a far-past
 *   date cannot erase anyone's data), none counted twice;
 * - every refusal is a 4xx with the error envelope, never a 5xx;
 * - what the read phase added to Redis memory (cached unions of distinct
 *   ranges and windows) stays under a stated bound;
 * - no single script runs longer than 50 ms (Redis `SLOWLOG`): the worst legal
 *   requests are replayed one at a time after the load, three times each, and
 *   the fastest run counts, so a script that is slow by itself fails while a
 *   scheduling stall of a loaded 2-core machine (which slows INFO and HSET
 *   alike) does not. Scripts slow under the load are reported too.
 *
 * Used by `npm run soak -- --abuse` (60 s) and `test/redis/abuse.test.ts`
 * (shorter). Loopback only; bounded in time and count.
 */
import { checkLegit, readAttacks, rng, writeAttacks, writeLegit } from "./abuse/attacks.ts";
import { caller } from "./abuse/caller.ts";
import { probeWorst, slowEntries } from "./abuse/worst.ts";
import { connectResp, type RespClient } from "./resp.ts";
import { startStack } from "./stack.ts";
import { startWranglerDev } from "./wrangler.ts";

export interface AbuseKeys {
  ingest: string;
  /** A second ingest key (another team): its Idempotency-Keys must not collide with the first one's. */
  ingest2: string;
  read: string;
  admin: string;
}

export interface AbuseOptions {
  url: string;
  keys: AbuseKeys;
  /** Direct connection to the redis-server behind the Worker (for INFO, SLOWLOG). */
  redis: RespClient;
  seconds: number;
  /** Concurrent clients per phase. @default 4 */
  clients?: number;
  /** A script slower than this is a problem. @default 50 */
  slowMs?: number;
  log?: (line: string) => void;
}

export interface AbuseReport {
  requests: number;
  byStatus: Record<string, number>;
  /** Memory the read phase added (bytes). */
  readGrowth: number;
  /** Memory the write phase added (bytes): the attackers' own increments. */
  writeGrowth: number;
  /** Worst requests whose script, replayed alone, ran longer than `slowMs` every time: [ms, request]. */
  slow: [number, string][];
  /** Commands over `slowMs` during the concurrent load (a loaded machine stalls any of them): [ms, command]. */
  slowUnderLoad: [number, string][];
  /** The slowest script of each worst request replayed alone (fastest of three runs): [ms, request]. */
  probes: [number, string][];
  problems: string[];
}

export async function runAbuse(options: AbuseOptions): Promise<AbuseReport> {
  const { keys, redis } = options;
  const log = options.log ?? (() => {});
  const clients = options.clients ?? 4;
  const slowMs = options.slowMs ?? 50;
  const c = caller(options.url);
  const rand = rng(12);
  const memory = async () => {
    const info = String(await redis.call("INFO", "memory"));
    return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
  };
  /** Runs the attacks for `seconds`, `clients` at a time, each client picking one at random after the other. */
  const phase = async (seconds: number, attacks: (() => Promise<void>)[]) => {
    const end = Date.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (Date.now() < end) await attacks[Math.floor(rand() * attacks.length)]!();
      }),
    );
  };

  const legit = await writeLegit(c, keys);
  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", String(slowMs * 1000));
  await redis.call("SLOWLOG", "RESET");
  const before = await memory();
  await phase(options.seconds / 2, writeAttacks(c, keys, legit, rand));
  const afterWrites = await memory();
  await phase(options.seconds / 2, readAttacks(c, keys, rand));
  const afterReads = await memory();
  await checkLegit(c, keys, legit);

  const slowUnderLoad: [number, string][] = (await slowEntries(redis)).map((e) => [
    Math.round(Number(e[2]) / 1000),
    e[3].slice(0, 3).map(String).join(" ").slice(0, 80),
  ]);
  const probes = await probeWorst(c, keys, redis);
  const slow = probes.filter(([ms]) => ms > slowMs);
  const requests = c.requests();
  const byStatus = c.byStatus;
  const report: AbuseReport = {
    requests,
    byStatus,
    readGrowth: afterReads - afterWrites,
    writeGrowth: afterWrites - before,
    slow,
    slowUnderLoad,
    probes,
    problems: c.problems(),
  };
  log(
    `abuse: ${requests} requests, statuses ${JSON.stringify(byStatus)}, write phase +${(report.writeGrowth / 1024).toFixed(0)} KiB, read phase +${(report.readGrowth / 1024).toFixed(0)} KiB, ${report.problems.length} kinds of problem`,
  );
  log(
    `abuse: worst requests alone, slowest script (ms): ${probes.map(([ms, l]) => `${l} ${ms}`).join("; ")}; ${slowUnderLoad.length} commands over ${slowMs} ms under load`,
  );
  return report;
}

export const ABUSE_KEYS: AbuseKeys = {
  ingest: "abuse-ingest-key-0001",
  ingest2: "abuse-ingest-key-0002",
  read: "abuse-read-key-00001",
  admin: "abuse-admin-key-0001",
};

/**
 * What the read phase may add to Redis memory for this run's data (one 60-day
 * day counter of 200 members a day, one stream of 300 members): the cached
 * unions the README's "Bounded caching" allows, with room for Redis' own
 * overhead (script cache, client buffers).
 */
export const READ_GROWTH_BOUND = 2 * 1024 * 1024;

/** A redis-server of its own (so INFO and SLOWLOG see only this run), the local Upstash server and the real Worker. */
export async function startAbuseTarget() {
  const stack = await startStack({ token: "abuse-token" });
  const redis = await connectResp(stack.redisUrl);
  const worker = await startWranglerDev({
    vars: {
      UPSTASH_REDIS_REST_URL: stack.upstash.url,
      UPSTASH_REDIS_REST_TOKEN: stack.token,
      INGEST_KEYS: `${ABUSE_KEYS.ingest},${ABUSE_KEYS.ingest2}`,
      READ_KEYS: ABUSE_KEYS.read,
      ADMIN_KEYS: ABUSE_KEYS.admin,
      KEY_PREFIX: "abuse",
      TRENDING_CACHE_SECONDS: "0",
      REDIS_TIMEOUT_MS: "10000",
    },
  });
  return {
    url: worker.url,
    redis,
    async stop() {
      redis.close();
      await worker.stop();
      await stack.stop();
    },
  };
}

/** `npm run soak -- --abuse`: 60 s (SOAK_SECONDS), exits 1 on any problem. */
export async function abuseMain(seconds: number): Promise<void> {
  const target = await startAbuseTarget();
  let report: AbuseReport;
  try {
    report = await runAbuse({ url: target.url, keys: ABUSE_KEYS, redis: target.redis, seconds, log: console.log });
  } finally {
    await target.stop();
  }
  const failures = [...report.problems];
  if (report.readGrowth >= READ_GROWTH_BOUND)
    failures.push(`read phase added ${report.readGrowth} bytes, over the bound of ${READ_GROWTH_BOUND}`);
  for (const [ms, request] of report.slow)
    failures.push(`${request}: its script ran ${ms} ms alone, three times in a row`);
  if (failures.length > 0) {
    console.error(`\nABUSE FAILED:\n${failures.slice(0, 30).join("\n")}`);
    process.exit(1);
  }
  console.log(
    "ABUSE PASSED: nothing acknowledged lost, every refusal a clean 4xx, memory and script time within bounds.",
  );
}
