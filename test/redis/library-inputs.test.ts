/**
 * The library's side of review 14's fixes, beyond the review's own tests: the clock's checks
 * (seconds and µs refused, fractional floored), the unknown-field and null-item refusals with the
 * service's wording and paths, the ISO-8601 `at` of trending, the listings and the batch of score
 * changes, each next to the service (the real Hono app on the same prefix). Real redis-server
 * behind the local Upstash server.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { ConfigError, Edgestats, ValidationError } from "../../src/index.ts";
import { keySnapshot } from "../helpers/key-snapshot.ts";
import { appHttp, libraryTest } from "../helpers/library.ts";

const lib = libraryTest("libinputs");
const KEYS = { ingest: "libinputs-ingest-key-1", read: "libinputs-read-key-001", admin: "libinputs-admin-key-01" };
const now = Date.UTC(2026, 10, 25, 12, 30);
const app = createApp({ now: () => now });
const env = lib.appEnv(KEYS);
const stats = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => now });

/** The service's answer to a request with the admin key: status and parsed body. */
const http = appHttp(app, env, KEYS.admin);

const refusal = (p: () => Promise<unknown>) =>
  Promise.resolve()
    .then(p)
    .then(
      (v) => {
        throw new Error(`not refused: ${JSON.stringify(v)}`);
      },
      (e: unknown) => e as ValidationError,
    );

describe("the clock", () => {
  it("a clock in seconds, in µs, or not a number is a ConfigError before any key is written", async () => {
    for (const [label, clock] of [
      ["seconds", () => Math.floor(now / 1000)],
      ["µs", () => now * 1000],
      ["Infinity", () => Number.POSITIVE_INFINITY],
      ["string", () => String(now) as unknown as number],
    ] as const) {
      const { prefix } = lib.ctx(0, `clock-${label}`);
      const odd = new Edgestats({ redis: lib.redis, prefix, clock });
      const error = await refusal(() => odd.counter("c").incr("a"));
      expect(error, label).toBeInstanceOf(ConfigError);
      expect(error.message, label).toMatch(/^clock must return epoch milliseconds/);
      // the synchronous-looking reads and jobs reject too (never a synchronous throw)
      await expect(odd.presence("r").history(), label).rejects.toBeInstanceOf(ConfigError);
      await expect(odd.jobs.trim(), label).rejects.toBeInstanceOf(ConfigError);
      expect(await keySnapshot(lib.target, prefix), label).toEqual([]);
    }
  });

  it("a fractional clock is floored: the player joined at the whole ms, readable by the service", async () => {
    const hiRes = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => now + 0.999 });
    await hiRes.leaderboard("frac").join("ada", { name: "Ada", score: 5 });
    await hiRes.presence("frac").heartbeat(["u", "v"]);
    expect((await http("GET", "/v1/leaderboards/frac/players/ada")).body).toMatchObject({ score: 5, rank: 1 });
    expect(await stats.presence("frac").count()).toBe(2);
  });
});

describe("unknown fields and null items", () => {
  it("are refused with the service's wording, each at its path, nothing written", async () => {
    const before = await keySnapshot(lib.target, lib.prefix);
    const one = await refusal(() => stats.trending("t").record({ member: "a", cnt: 5 } as never));
    expect(one.details).toEqual([{ in: "json", path: "", message: 'Unrecognized key: "cnt"' }]);
    const many = await refusal(() =>
      stats.counter("c").incr([{ member: "a" }, { member: "b", bye: 2, per: "day" }, null] as never),
    );
    expect(many.details).toEqual([
      { in: "json", path: "items.1", message: 'Unrecognized keys: "bye", "per"' },
      { in: "json", path: "items.2", message: "must be an object, not null" },
    ]);
    const theirs = await http("POST", "/v1/counters/c/incr", { items: [{ member: "a" }, { member: "b", bye: 2 }] });
    expect(theirs.status).toBe(400);
    expect(theirs.body.error.details.map((d: { path: string }) => d.path)).toEqual(["items.1"]);
    const histogram = await refusal(() => stats.histogram("h").observe([1, { value: 2, when: 3 }] as never));
    expect(histogram.details).toEqual([{ in: "json", path: "values.1", message: 'Unrecognized key: "when"' }]);
    const source = await refusal(() =>
      stats.counter("u").union({ sources: ["c", { counter: "c", perod: "day" }] } as never),
    );
    expect(source.details?.[0]?.path).toBe("sources.1");
    // a score change is `{ by }` or `{ set, mode }`: both at once is refused, as the service does
    const both = await refusal(() => stats.leaderboard("b").score("p", { by: 1, set: 2 } as never));
    expect(both.details).toEqual([{ in: "json", path: "", message: 'Unrecognized key: "set"' }]);
    expect(await keySnapshot(lib.target, lib.prefix)).toEqual(before);
  });

  it("every field the service's bodies take is still taken", async () => {
    await stats.histogram("ok-h").configure({ bucketWidth: 5, unit: "ms", retentionDays: 3 });
    await stats.histogram("ok-h").observe([1, { value: 2, at: now }]);
    await stats.counter("ok-c").incr({ member: "a", by: 2, period: "day", at: now, ttl: 3600 });
    await stats.counter("ok-u").union({
      sources: [{ counter: "ok-c", period: "day", from: now, to: now }],
      aggregate: "sum",
      weights: [2],
      ttl: 60,
    });
    await stats
      .leaderboard("ok-b")
      .configure({ ties: "reached", reset: "none", keepSeasons: 2, minScore: null, maxScore: 100, maxIncrement: 50 });
    await stats.leaderboard("ok-b").join("p", { name: "P", meta: { a: 1 }, score: 1 });
    await stats.leaderboard("ok-b").score("p", { set: 3, mode: "best" });
    await stats.trending("ok-t").record([{ member: "a", count: 2, at: now }]);
    expect((await stats.counter("ok-u").top()).items).toMatchObject([{ member: "a", score: 4 }]);
  });
});

describe("trending's ISO-8601 `at`", () => {
  it("lands in the hour the service puts it in; a string that is no timestamp is refused at its path", async () => {
    const at = "2026-11-25T11:15:00Z";
    await stats.trending("iso").record([
      { member: "a", at },
      { member: "b", at: now },
    ]);
    await http("POST", "/v1/trending/iso-http/events", {
      events: [
        { member: "a", at },
        { member: "b", at: now },
      ],
    });
    const mine = await stats.trending("iso").history("a", { hours: 2 });
    const theirs = await stats.trending("iso-http").history("a", { hours: 2 });
    expect(mine).toEqual({ ...theirs, stream: "iso" });
    const bad = await refusal(() => stats.trending("iso").record([{ member: "a" }, { member: "b", at: "yesterday" }]));
    expect(bad.details).toEqual([
      { in: "json", path: "events.1.at", message: "must be epoch milliseconds or an ISO-8601 timestamp" },
    ]);
  });
});

describe("listings and batch scores", () => {
  it("list what was written, as the service's GETs do", async () => {
    const { prefix } = lib.ctx(0, "lists");
    const own = new Edgestats({ redis: lib.redis, prefix, clock: () => now });
    const svc = createApp({ now: () => now });
    const svcEnv = lib.appEnv(KEYS, { KEY_PREFIX: prefix });
    const get = async (path: string) =>
      (await svc.request(path, { headers: { authorization: `Bearer ${KEYS.admin}` } }, svcEnv)).json();
    await own.trending("s1").record("a");
    await own.counter("c1").incr("a");
    await own.histogram("h1").configure({ bucketWidth: 1 });
    await own.histogram("h1").observe(1);
    await own.presence("r1").heartbeat("u");
    await own.leaderboard("b1").join("p", { name: "P" });
    expect(await own.streams()).toEqual(["s1"]);
    expect(await own.streams()).toEqual(((await get("/v1/trending")) as { streams: string[] }).streams);
    expect((await own.counters()).counters).toEqual(["c1"]);
    expect((await own.histograms({ limit: 10 })).histograms).toEqual(["h1"]);
    expect(await own.rooms()).toEqual({ rooms: ["r1"], truncated: false, nextCursor: null });
    expect((await own.boards()).boards).toEqual(["b1"]);
    await expect(own.counters({ limit: 0 })).rejects.toBeInstanceOf(ValidationError);
  });

  it("scores changes many players in one all-or-nothing write, exactly once with an idempotencyKey", async () => {
    const board = stats.leaderboard("batch");
    await board.join("a", { name: "A" });
    await board.join("b", { name: "B" });
    const changes = [
      { player: "a", by: 5 },
      { player: "b", set: 9 },
    ];
    const first = await board.scores(changes, { idempotencyKey: "k1" });
    expect(first.results).toEqual([
      { player: "a", score: 5, rank: 2 },
      { player: "b", score: 9, rank: 1 },
    ]);
    expect((await board.scores(changes, { idempotencyKey: "k1" })).replayed).toBe(true);
    // one unknown player: nothing applied
    await expect(
      board.scores([
        { player: "a", by: 1 },
        { player: "nobody", by: 1 },
      ]),
    ).rejects.toThrow();
    expect((await board.get("a")).score).toBe(5);
  });
});
