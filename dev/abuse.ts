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

type Json = Record<string, any>;

const DAY = 86_400_000;

/** A small deterministic generator, so a failing run can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export async function runAbuse(options: AbuseOptions): Promise<AbuseReport> {
  const { url, keys, redis } = options;
  const log = options.log ?? (() => {});
  const clients = options.clients ?? 4;
  const slowMs = options.slowMs ?? 50;
  // Each kind of problem once, with how often it happened: a broken guard fails hundreds of requests alike.
  const seen = new Map<string, number>();
  const problems = {
    push(problem: string) {
      const kind = problem.replace(/\d+/g, "#").slice(0, 160);
      seen.set(kind, (seen.get(kind) ?? 0) + 1);
    },
  };
  const byStatus: Record<string, number> = {};
  let requests = 0;
  const rand = rng(12);

  async function call(method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) {
    requests++;
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
    const where = `${method} ${path.slice(0, 120)}`;
    if (res.status >= 500) problems.push(`${where}: ${res.status} ${text.slice(0, 200)}`);
    if (res.status >= 400) {
      const e = parsed?.error;
      if (typeof e?.code !== "string" || typeof e?.message !== "string")
        problems.push(`${where}: ${res.status} without the error envelope: ${text.slice(0, 200)}`);
    }
    return { status: res.status, body: parsed as Json };
  }
  const expectStatus = (what: string, res: { status: number; body: Json }, ...allowed: number[]) => {
    if (!allowed.includes(res.status))
      problems.push(
        `${what}: expected ${allowed.join("|")}, got ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`,
      );
  };

  const memory = async () => {
    const info = String(await redis.call("INFO", "memory"));
    return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN);
  };

  // ---- Legit data, written by the admin and acknowledged: it must all survive. ----
  const now = Date.now();
  const legit = {
    counter: new Map<string, number>(),
    days: new Map<string, number>(),
    trending: new Map<string, number>(),
  };
  const write = async (path: string, body: unknown, key = keys.ingest) => {
    const res = await call("POST", path, key, body);
    expectStatus(`legit ${path}`, res, 200);
    return res.status === 200;
  };
  for (let m = 0; m < 50; m++) {
    if (await write("/v1/counters/legit/incr", { member: `m${m}`, by: m + 1 })) legit.counter.set(`m${m}`, m + 1);
  }
  // A day counter over 60 days, 200 members a day: the ground the read phase digs in.
  for (let d = 0; d < 60; d++) {
    const items = Array.from({ length: 200 }, (_, i) => ({ member: `p${i}`, by: 1, period: "day", at: now - d * DAY }));
    if (await write("/v1/counters/daily/incr", { items })) legit.days.set(isoDay(now - d * DAY), 200);
  }
  for (let m = 0; m < 300; m++) {
    if (await write("/v1/trending/legit/events", { member: `t${m}`, count: 1 + (m % 7) }))
      legit.trending.set(`t${m}`, 1 + (m % 7));
  }
  expectStatus(
    "histogram settings",
    await call("PUT", "/v1/histograms/legit", keys.admin, { bucketWidth: 10 }),
    200,
    201,
  );
  await write("/v1/histograms/legit/observations", { values: Array.from({ length: 100 }, (_, i) => ({ value: i })) });

  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", String(slowMs * 1000));
  await redis.call("SLOWLOG", "RESET");

  // ---- Phase 1: ingest keys do their worst. ----
  const phase = async (seconds: number, attacks: (() => Promise<void>)[]) => {
    const end = Date.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (Date.now() < end) await attacks[Math.floor(rand() * attacks.length)]!();
      }),
    );
  };
  let floods = 0;
  let idem = 0;
  const before = await memory();
  await phase(options.seconds / 2, [
    async () => {
      // A 1-second ttl on a counter that has data, and on today's bucket of another.
      const res = await call("POST", "/v1/counters/legit/incr", keys.ingest, { member: "attacker", by: 1, ttl: 1 });
      expectStatus("ttl:1 on legit", res, 200, 400);
      if (res.status === 200) legit.counter.set("attacker", (legit.counter.get("attacker") ?? 0) + 1);
      const day = await call("POST", "/v1/counters/daily/incr", keys.ingest, {
        member: "attacker",
        by: 1,
        ttl: 1,
        period: "day",
      });
      expectStatus("ttl:1 on a day bucket", day, 200, 400);
      if (day.status === 200) legit.days.set(isoDay(Date.now()), (legit.days.get(isoDay(Date.now())) ?? 0) + 1);
    },
    async () => {
      // Far-past and far-future dates: each would be a bucket that never expires.
      const at = rand() < 0.5 ? "1000-01-01T00:00:00Z" : Date.now() + 3_600_000;
      const items = Array.from({ length: 1000 }, (_, i) => ({ member: `x${i}`, period: "day", at }));
      expectStatus("far dates, counters", await call("POST", `/v1/counters/dates/incr`, keys.ingest, { items }), 400);
      expectStatus(
        "far dates, trending",
        await call("POST", "/v1/trending/dates/events", keys.ingest, { member: "x", at }),
        400,
      );
      expectStatus(
        "far dates, histograms",
        await call("POST", "/v1/histograms/legit/observations", keys.ingest, { value: 1, at }),
        400,
      );
    },
    async () => {
      // 1,000-item batches of new names: their own increments, stored (and bounded by retention).
      const n = floods++;
      const items = Array.from({ length: 1000 }, (_, i) => ({ member: `f${n}-${i}`, ttl: 3600 }));
      expectStatus("flood counter", await call("POST", `/v1/counters/flood-${n}/incr`, keys.ingest, { items }), 200);
      const ids = Array.from({ length: 1000 }, (_, i) => `u${n}-${i}`);
      expectStatus(
        "flood presence",
        await call("POST", `/v1/presence/flood-${n % 5}/heartbeats`, keys.ingest, { ids }),
        200,
      );
    },
    async () => {
      // Idempotency collisions: another body under a used key is a 409 for the same caller,
      // and the same key from another ingest key is another request (applied).
      const key = `collide-${idem++}`;
      const first = await call(
        "POST",
        "/v1/counters/legit/incr",
        keys.ingest,
        { member: "idem", by: 1 },
        { "idempotency-key": key },
      );
      expectStatus("idempotent first", first, 200);
      if (first.status === 200) legit.counter.set("idem", (legit.counter.get("idem") ?? 0) + 1);
      expectStatus(
        "idempotent replay",
        await call(
          "POST",
          "/v1/counters/legit/incr",
          keys.ingest,
          { member: "idem", by: 1 },
          { "idempotency-key": key },
        ),
        200,
      );
      expectStatus(
        "idempotent conflict",
        await call(
          "POST",
          "/v1/counters/legit/incr",
          keys.ingest,
          { member: "idem", by: 2 },
          { "idempotency-key": key },
        ),
        409,
      );
      const other = await call(
        "POST",
        "/v1/counters/legit/incr",
        keys.ingest2,
        { member: "idem", by: 2 },
        { "idempotency-key": key },
      );
      expectStatus("same key, other caller", other, 200);
      if (other.status === 200) legit.counter.set("idem", (legit.counter.get("idem") ?? 0) + 2);
    },
    async () => {
      // Scope: an ingest key cannot delete counters, streams, boards, or run jobs.
      expectStatus("ingest deletes a counter", await call("DELETE", "/v1/counters/legit", keys.ingest), 403);
      expectStatus("ingest deletes a stream", await call("DELETE", "/v1/trending/legit", keys.ingest), 403);
      expectStatus("ingest runs a job", await call("POST", "/internal/jobs/compact", keys.ingest), 401, 403);
    },
  ]);
  const afterWrites = await memory();

  // ---- Phase 2: read keys do their worst. ----
  const today = Date.now();
  await phase(options.seconds / 2, [
    async () => {
      // Many distinct finished ranges of a 60-day counter: each would be a cached union.
      const from = today - (2 + Math.floor(rand() * 57)) * DAY;
      const to = Math.min(today - DAY, from + Math.floor(rand() * 30) * DAY);
      const aggregate = ["sum", "min", "max"][Math.floor(rand() * 3)];
      const res = await call(
        "GET",
        `/v1/counters/daily/top?n=10&period=day&from=${isoDay(from)}&to=${isoDay(to)}&aggregate=${aggregate}`,
        keys.read,
      );
      expectStatus("distinct ranges", res, 200);
    },
    async () => {
      // Every window width of a stream: each would be a cached union per hour.
      const hours = 1 + Math.floor(rand() * 48);
      expectStatus(
        "distinct windows",
        await call("GET", `/v1/trending/legit/top?n=100&window=${hours}h`, keys.read),
        200,
      );
      expectStatus(
        "member lookup",
        await call("GET", `/v1/trending/legit/members/t${Math.floor(rand() * 300)}?window=${hours}h`, keys.read),
        200,
        404,
      );
    },
    async () => {
      // The longest legal ranges.
      expectStatus(
        "400-day day range",
        await call(
          "GET",
          `/v1/counters/daily/top?n=100&period=day&from=${isoDay(today - 399 * DAY)}&to=${isoDay(today)}`,
          keys.read,
        ),
        200,
      );
      expectStatus(
        "400-day histogram",
        await call("GET", `/v1/histograms/legit?from=${isoDay(today - 399 * DAY)}&to=${isoDay(today)}`, keys.read),
        200,
      );
      expectStatus("lists", await call("GET", "/v1/counters", keys.read), 200);
    },
    async () => {
      // Beyond the limits, and outside the scope: refused cleanly.
      expectStatus(
        "401-day range",
        await call(
          "GET",
          `/v1/counters/daily/top?period=day&from=${isoDay(today - 500 * DAY)}&to=${isoDay(today)}`,
          keys.read,
        ),
        400,
      );
      expectStatus("read key writes", await call("POST", "/v1/counters/legit/incr", keys.read, { member: "r" }), 403);
      expectStatus("unknown key", await call("GET", "/v1/counters/legit/top", "not-a-key-of-ours-at-all"), 401);
    },
  ]);
  const afterReads = await memory();

  // ---- Nothing acknowledged was lost, nothing counted twice. ----
  await new Promise((r) => setTimeout(r, 1500)); // past every ttl:1 the attackers sent
  for (const [member, expected] of legit.counter) {
    const res = await call("GET", `/v1/counters/legit/members/${member}`, keys.read);
    if (res.body?.score !== expected)
      problems.push(`legit counter ${member}: acknowledged ${expected}, stored ${res.body?.score ?? res.status}`);
  }
  for (const [day, expected] of legit.days) {
    // Every legit write adds 1 to each of 200 members of its day (and the attacker's own +1s): the day's total.
    const res = await call("GET", `/v1/counters/daily/top?n=1000&period=day&from=${day}&to=${day}`, keys.read);
    const total = (res.body?.items ?? []).reduce((s: number, i: any) => s + i.score, 0);
    if (total !== expected) problems.push(`legit day ${day}: acknowledged ${expected}, stored ${total}`);
  }
  for (const [member, expected] of legit.trending) {
    const res = await call("GET", `/v1/trending/legit/members/${member}?window=1h`, keys.read);
    if (res.body?.count !== expected)
      problems.push(`legit trending ${member}: acknowledged ${expected}, stored ${res.body?.count ?? res.status}`);
  }

  type SlowEntry = [number, number, number, (string | Buffer)[]];
  const slowEntries = async () => ((await redis.call("SLOWLOG", "GET", "1000")) ?? []) as unknown as SlowEntry[];
  const slowUnderLoad: [number, string][] = (await slowEntries()).map((e) => [
    Math.round(Number(e[2]) / 1000),
    e[3].slice(0, 3).map(String).join(" ").slice(0, 80),
  ]);

  // ---- The worst legal requests, one at a time: the slowest script each ran, fastest of three. ----
  const longAgo = isoDay(today - 399 * DAY);
  const worst: [string, (attempt: number) => Promise<unknown>][] = [
    [
      "400-day day-counter range, uncached",
      (a) =>
        call(
          "GET",
          `/v1/counters/daily/top?n=100&period=day&from=${longAgo}&to=${isoDay(today - DAY)}&aggregate=${["sum", "min", "max"][a]}`,
          keys.read,
        ),
    ],
    [
      "400-day hourly counter range",
      () => call("GET", `/v1/counters/hourly/top?n=100&period=hour&from=${longAgo}&to=${isoDay(today)}`, keys.read),
    ],
    ["400-day histogram", () => call("GET", `/v1/histograms/legit?from=${longAgo}&to=${isoDay(today)}`, keys.read)],
    [
      "trending top 100 over a rebuilt 4x h window",
      (a) => call("GET", `/v1/trending/legit/top?n=100&window=${45 + a}h`, keys.read),
    ],
    ["trending member lookup", () => call("GET", "/v1/trending/legit/members/t7?window=24h", keys.read)],
    [
      "1,000-item day-counter batch",
      (a) =>
        call("POST", "/v1/counters/daily/incr", keys.admin, {
          items: Array.from({ length: 1000 }, (_, i) => ({ member: `w${a}-${i}`, period: "day" })),
        }),
    ],
    [
      "1,000 new presence ids",
      (a) =>
        call("POST", "/v1/presence/probe/heartbeats", keys.admin, {
          ids: Array.from({ length: 1000 }, (_, i) => `p${a}-${i}`),
        }),
    ],
    [
      "ranking 1,000 named players of a board",
      () =>
        call("POST", "/v1/leaderboards/legit/rank", keys.read, {
          players: Array.from({ length: 1000 }, (_, i) => `pl${i}`),
        }),
    ],
    [
      "1,000 trending events of new members",
      (a) =>
        call("POST", "/v1/trending/legit/events", keys.admin, {
          events: Array.from({ length: 1000 }, (_, i) => ({ member: `n${a}-${i}` })),
        }),
    ],
  ];
  // 50 players joined; the ranking request names 1,000 (the other 950 come back as unknown, at the same cost).
  for (let i = 0; i < 50; i++)
    expectStatus(
      "join",
      await call("PUT", `/v1/leaderboards/legit/players/pl${i}`, keys.ingest, { name: `P${i}`, score: i }),
      200,
      201,
    );
  await write("/v1/counters/hourly/incr", {
    items: Array.from({ length: 24 }, (_, h) => ({ member: "x", period: "hour", at: today - h * 3_600_000 })),
  });
  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", "0");
  const probes: [number, string][] = [];
  for (const [label, send] of worst) {
    let best = Infinity;
    for (let attempt = 0; attempt < 3; attempt++) {
      await redis.call("SLOWLOG", "RESET");
      await send(attempt);
      const scripts = (await slowEntries()).filter((e) => /^eval/i.test(String(e[3][0])));
      best = Math.min(best, Math.max(0, ...scripts.map((e) => Number(e[2]) / 1000)));
    }
    probes.push([Math.round(best * 10) / 10, label]);
  }
  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", "10000");
  const slow = probes.filter(([ms]) => ms > slowMs);
  const report: AbuseReport = {
    requests,
    byStatus,
    readGrowth: afterReads - afterWrites,
    writeGrowth: afterWrites - before,
    slow,
    slowUnderLoad,
    probes,
    problems: [...seen].map(([p, n]) => (n > 1 ? `${p} (×${n})` : p)),
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
