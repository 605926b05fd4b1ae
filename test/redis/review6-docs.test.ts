/**
 * Review 6 ("is what we tell users true?"): the claims of docs/library.md (and README's
 * configuration defaults the library shares) checked against the real library on the local
 * Upstash server, and the typed client (`edgestats/client`) against the real Hono app in Node.
 * Each test cites the doc line or heading it checks.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { createClient, EdgestatsError as ClientError } from "../../src/client.ts";
import {
  ConfigError,
  ConflictError,
  Edgestats,
  EdgestatsError,
  NotFoundError,
  ValidationError,
} from "../../src/index.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("review6lib");
const T0 = Date.UTC(2026, 10, 25, 12, 30);
const make = (clock: () => number, extra: Record<string, unknown> = {}) =>
  new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock, ...extra });
const fails = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e,
  );

describe("docs/library.md ## The library: options and defaults", () => {
  it("defaults: prefix es, retentionHours 50, keep 2400, compactBatches 100, timeoutSeconds 300 (docs/library.md:12-18)", () => {
    const stats = new Edgestats({ redis: lib.redis });
    expect(stats.config.keyPrefix).toBe("es");
    const c = stats.config as any;
    expect(JSON.stringify(c)).toMatch(/50/);
    expect(c.trendingRetentionHours ?? c.trending?.retentionHours).toBe(50);
    expect(c.trendingKeep ?? c.trending?.keep).toBe(2400);
    expect(c.trendingCompactBatches ?? c.trending?.compactBatches).toBe(100);
    expect(c.presenceTimeoutSeconds ?? c.presence?.timeoutSeconds).toBe(300);
  });

  it("a bad setting is a ConfigError, an EdgestatsError (docs/library.md:20)", () => {
    let err: unknown;
    try {
      new Edgestats({ redis: lib.redis, presence: { timeoutSeconds: -1 } } as any);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect(err).toBeInstanceOf(EdgestatsError);
  });

  it("a client without evalsha/eval is a TypeError naming Redis.fromEnv (src/library/edgestats.ts, docs/library.md:12)", () => {
    expect(() => new Edgestats({ redis: {} } as any)).toThrow(TypeError);
  });

  it("presence.timeoutSeconds 300 by default: online at +300 s, offline at +301 s (docs/library.md:18)", async () => {
    let now = T0;
    const stats = make(() => now);
    await stats.presence("r6-room").heartbeat(["a"]);
    now += 300_000;
    expect(await stats.presence("r6-room").count()).toBe(1);
    now += 1000;
    expect(await stats.presence("r6-room").count()).toBe(0);
  });

  it("trending.retentionHours 50 by default: a 51h window is a ValidationError (docs/library.md:17, README ### Trending)", async () => {
    const stats = make(() => T0);
    expect((await stats.trending("r6-s").top({ window: "50h" })).items).toEqual([]);
    expect(await fails(stats.trending("r6-s").top({ window: "51h" }))).toBeInstanceOf(ValidationError);
  });

  it("observing into a histogram never configured is a NotFoundError (docs/library.md errors; docs/histograms.md:30)", async () => {
    const stats = make(() => T0);
    expect(await fails(stats.histogram("r6-never").observe(1))).toBeInstanceOf(NotFoundError);
  });
});

describe("docs/library.md: idempotencyKey", () => {
  it("a repeat within 24 h returns the first result and writes nothing (docs/library.md idempotencyKey)", async () => {
    const stats = make(() => T0);
    const c = stats.counter("r6-idem");
    const a = await c.incr("m", 2, { idempotencyKey: "k1" });
    const b = await c.incr("m", 2, { idempotencyKey: "k1" });
    // the first result, flagged as a replay
    expect(b).toEqual({ ...a, replayed: true });
    expect((await c.member("m")).score).toBe(2);
  });

  it("the same key with other arguments is a ConflictError (src/library/shared.ts WriteOptions doc)", async () => {
    const stats = make(() => T0);
    const c = stats.counter("r6-idem2");
    await c.incr("m", 2, { idempotencyKey: "k2" });
    expect(await fails(c.incr("m", 3, { idempotencyKey: "k2" }))).toBeInstanceOf(ConflictError);
  });

  it("the record's scope is the operation and name: the same key on another counter writes (docs/library.md idempotencyKey)", async () => {
    const stats = make(() => T0);
    await stats.counter("r6-scope-a").incr("m", 1, { idempotencyKey: "same" });
    await stats.counter("r6-scope-b").incr("m", 1, { idempotencyKey: "same" });
    expect((await stats.counter("r6-scope-b").member("m")).score).toBe(1);
  });
});

describe("docs/library.md: jobs and site-wide presence", () => {
  it("stats.jobs.compact/trim/sweepCounters/leaderboardSnapshot run and return a summary", async () => {
    const stats = make(() => T0);
    for (const job of ["compact", "trim", "sweepCounters", "leaderboardSnapshot"] as const) {
      const res = await stats.jobs[job]();
      expect(typeof res).toBe("object");
    }
  });

  it("presenceTotal() answers today's distinct ids as an estimate with its error (docs/library.md Site-wide presence)", async () => {
    // a prefix of its own: site-wide totals count every room under the prefix
    const stats = new Edgestats({ redis: lib.redis, prefix: lib.ctx(T0, "review6total").prefix, clock: () => T0 });
    await stats.presence("r6-total").heartbeat(["x", "y"]);
    const total = await stats.presenceTotal();
    expect(total.activeToday).toBe(2);
    expect(total.activeTodayError).toBe(0.0081);
  });
});

describe("docs/library.md ## The client", () => {
  const KEYS = { ingest: "review6-ingest-key-01", read: "review6-read-key-0001", admin: "review6-admin-key-001" };
  const env = lib.appEnv(KEYS);
  const app = createApp({ now: () => T0 });

  /** A client whose fetch answers `script` statuses first, then the real app; records each request. */
  function scripted(script: Array<number | Error>, key = KEYS.admin) {
    const sent: Array<{ headers: Headers }> = [];
    const client = createClient({
      baseUrl: "http://edgestats.test",
      key,
      backoffMs: () => 0,
      fetch: async (request: Request) => {
        sent.push({ headers: new Headers(request.headers) });
        const next = script.shift();
        if (next instanceof Error) throw next;
        if (next !== undefined)
          return new Response(JSON.stringify({ error: { code: "x", message: "scripted" } }), {
            status: next,
            headers: { "content-type": "application/json", "retry-after": "0" },
          });
        return app.request(request, undefined, env);
      },
    });
    return { client, sent };
  }

  it("a POST sends an Idempotency-Key, the same on every retry after a 503 (docs/library.md Retries)", async () => {
    const { client, sent } = scripted([503, 503]);
    await client.counters.incr("r6-client", { member: "m" });
    expect(sent).toHaveLength(3);
    const keys = sent.map((r) => r.headers.get("idempotency-key"));
    expect(keys[0]).toBeTruthy();
    expect(new Set(keys).size).toBe(1);
  });

  it("retries = 3 by default: four attempts, then the EdgestatsError of the last answer", async () => {
    const { client, sent } = scripted([503, 503, 503, 503, 503]);
    const err = await fails(client.counters.incr("r6-client2", { member: "m" }));
    expect(sent).toHaveLength(4);
    expect(err).toBeInstanceOf(ClientError);
    expect(err).toBeInstanceOf(EdgestatsError); // "a subclass of the library's"
    expect((err as ClientError).status).toBe(503);
  });

  it("never retries a 4xx (docs/library.md Retries)", async () => {
    const { client, sent } = scripted([429]);
    const err = await fails(client.counters.incr("r6-client3", { member: "m" }));
    expect(sent).toHaveLength(1);
    expect((err as ClientError).status).toBe(429);
  });

  it("never retries a DELETE (docs/library.md Retries)", async () => {
    const { client, sent } = scripted([503]);
    const err = await fails(client.counters.delete("r6-client4"));
    expect(sent).toHaveLength(1);
    expect((err as ClientError).status).toBe(503);
  });

  it("status 0 when no response came (network error after the last retry) (docs/library.md ## The client)", async () => {
    const { client, sent } = scripted([
      new TypeError("down"),
      new TypeError("down"),
      new TypeError("down"),
      new TypeError("down"),
    ]);
    const err = await fails(client.counters.top("r6-client5"));
    expect(sent).toHaveLength(4);
    expect((err as ClientError).status).toBe(0);
  });

  it("a real 400 from the service carries code and details (docs/library.md ## The client)", async () => {
    const { client } = scripted([], KEYS.ingest);
    const err = (await fails(client.counters.incr("r6-client6", { member: "m", by: "x" as any }))) as ClientError;
    expect(err.status).toBe(400);
    expect(typeof err.code).toBe("string");
    expect(JSON.stringify(err.details)).toContain("by");
  });
});
