/**
 * Review 22: the library's public surface as its docs write it. The examples of src/index.ts's
 * module comment and docs/library.md's calls are run as written (the client aside: `createRedis`
 * on the local Upstash server in place of `Redis.fromEnv()`), on the real redis-server; the
 * errors are the typed classes the docs name, thrown before any command where the docs say so.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as lib from "../../src/index.ts";
import {
  ConfigError,
  ConflictError,
  createRedis,
  EdgestatsError,
  Edgestats,
  ValidationError,
} from "../../src/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { resetStats, statsOf } from "../helpers/upstash-rest.ts";

const t = libraryTest("review22lib");
const now = Date.UTC(2026, 10, 28, 12, 30);
// the local Upstash server counts requests per token tag: this file's own
const tag = `r22lib${Math.random().toString(36).slice(2, 8)}`;
const redis = createRedis({ url: t.target.url, token: `${t.target.token}.${tag}` });
const statsAt = (label: string, extra: Partial<lib.EdgestatsOptions> = {}) =>
  new Edgestats({ redis, prefix: t.ctx(now, label).prefix, clock: () => now, ...extra });

/** Commands the local Upstash server ran for this file's client while `fn` ran. */
async function commandsOf(fn: () => Promise<unknown>): Promise<number> {
  await resetStats(t.target, tag);
  await fn();
  return (await statsOf(t.target, tag)).commands;
}

describe("src/index.ts's module example, as written", () => {
  it("record then top: the member is first", async () => {
    const source = readFileSync("src/index.ts", "utf8");
    expect(source).toContain('await stats.trending("searches").record("redis");');
    expect(source).toContain('const { items } = await stats.trending("searches").top({ n: 10 });');
    const stats = statsAt("r22-example");
    await stats.trending("searches").record("redis");
    const { items } = await stats.trending("searches").top({ n: 10 });
    expect(items[0]).toMatchObject({ member: "redis", count: 1 });
  });
});

describe("docs/library.md's calls, as written", () => {
  const doc = readFileSync("docs/library.md", "utf8");

  it("batch scores: `scores([{ player, by }, { player, set, mode }], { idempotencyKey })`, all or nothing, replayed once", async () => {
    expect(doc).toContain(
      "stats.leaderboard(b).scores([{ player, by }, { player, set, mode }], {\n  idempotencyKey })",
    );
    const stats = statsAt("r22-scores");
    const b = "board";
    for (const player of ["p1", "p2"]) await stats.leaderboard(b).join(player, { name: player });
    const changes = [
      { player: "p1", by: 5 },
      { player: "p2", set: 7, mode: "replace" as const },
    ];
    const first = await stats.leaderboard(b).scores(changes, { idempotencyKey: "r22-k1" });
    const again = await stats.leaderboard(b).scores(changes, { idempotencyKey: "r22-k1" });
    expect(again).toEqual({ ...first, replayed: true });
    expect((await stats.leaderboard(b).get("p1")).score).toBe(5);
    expect((await stats.leaderboard(b).get("p2")).score).toBe(7);
    // another value under the same key: ConflictError, nothing applied
    await expect(
      stats.leaderboard(b).scores([{ player: "p1", by: 1 }], { idempotencyKey: "r22-k1" }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect((await stats.leaderboard(b).get("p1")).score).toBe(5);
    // one unknown player: the whole batch refused, p1 unchanged
    await expect(
      stats.leaderboard(b).scores([
        { player: "p1", by: 1 },
        { player: "nobody", by: 1 },
      ]),
    ).rejects.toBeInstanceOf(EdgestatsError);
    expect((await stats.leaderboard(b).get("p1")).score).toBe(5);
  });

  it("listings: streamPage/streams, counters, histograms, rooms, boards by cursor and by offset", async () => {
    for (const call of [
      "stats.streamPage({ limit, cursor })",
      "stats.streams()",
      "stats.counters({ limit, offset })",
      "stats.histograms({ limit, offset })",
      "stats.rooms({ limit, cursor })",
      "stats.boards({ limit, cursor | offset })",
    ])
      expect(doc.replace(/\s+/g, " ")).toContain(call);
    const stats = statsAt("r22-lists");
    await stats.trending("s1").record("m");
    await stats.trending("s2").record("m");
    await stats.counter("c1").incr("m");
    await stats.histogram("h1").configure({ bucketWidth: 1 });
    await stats.histogram("h1").observe(1);
    await stats.presence("r1").heartbeat("u1");
    await stats.leaderboard("b1").join("p", { name: "P" });
    await stats.leaderboard("b2").join("p", { name: "P" });

    const page = await stats.streamPage({ limit: 1 });
    expect(page.streams).toEqual(["s1"]);
    const rest = await stats.streamPage({ limit: 1, cursor: page.nextCursor as string });
    expect(rest.streams).toEqual(["s2"]);
    expect(await stats.streams()).toEqual(["s1", "s2"]);
    expect(await stats.counters({ limit: 10, offset: 0 })).toMatchObject({ counters: ["c1"] });
    expect(JSON.stringify(await stats.histograms({ limit: 10, offset: 0 }))).toContain("h1");
    expect(JSON.stringify(await stats.rooms({ limit: 10 }))).toContain("r1");
    const byCursor = await stats.boards({ limit: 1 });
    const byOffset = await stats.boards({ limit: 1, offset: 1 });
    expect(JSON.stringify(byCursor)).toContain("b");
    expect(JSON.stringify([byCursor, byOffset])).toContain("b1");
    expect(JSON.stringify([byCursor, byOffset])).toContain("b2");
  });

  it("jobs: compact, trim, sweepCounters, leaderboardSnapshot run with the library's settings; presenceTotal after trim", async () => {
    expect(doc).toContain("`stats.jobs.compact()`, `trim()`, `sweepCounters()`, `leaderboardSnapshot()`");
    const stats = statsAt("r22-jobs");
    await stats.presence("room").heartbeat(["a", "b"]);
    for (const job of ["compact", "trim", "sweepCounters", "leaderboardSnapshot"] as const) {
      const result = await stats.jobs[job]();
      expect(result, job).toBeTypeOf("object");
    }
    const total = await stats.presenceTotal();
    expect(total.online).toBe(2);
  });

  it("the options table's defaults are the effective config", () => {
    for (const row of [
      '| `prefix` | `"es"` |',
      "| `trending.retentionHours` / `keep` / `compactBatches` | 50 / 2400 / 100 |",
      "| `presence.timeoutSeconds` | 300 |",
    ])
      expect(doc).toContain(row);
    const stats = new Edgestats({ redis: t.redis });
    expect(stats.config).toMatchObject({
      keyPrefix: "es",
      trendingRetentionHours: 50,
      trendingKeep: 2400,
      trendingCompactBatches: 100,
      presenceTimeoutSeconds: 300,
    });
  });
});

describe("typed errors, as the docs name them", () => {
  it("a misspelt setting, an empty prefix, a bad prefix: ConfigError from `new Edgestats`", () => {
    for (const options of [
      { prefx: "x" },
      { prefix: "" },
      { prefix: "a:b" },
      { trending: { retention: 5 } },
      { presence: { timeoutSeconds: 0 } },
    ]) {
      expect(() => new Edgestats({ redis: t.redis, ...(options as object) }), JSON.stringify(options)).toThrow(
        ConfigError,
      );
    }
  });

  it("a clock in seconds or NaN: a rejected promise (ConfigError) before any command, reads and jobs too", async () => {
    for (const clock of [() => now / 1000, () => Number.NaN, () => now * 1000]) {
      const stats = statsAt("r22-clock", { clock });
      for (const call of [
        () => stats.counter("c").top(),
        () => stats.trending("s").record("m"),
        () => stats.jobs.trim(),
      ]) {
        let thrown: unknown;
        const commands = await commandsOf(async () => {
          try {
            await call();
          } catch (error) {
            thrown = error;
          }
        });
        expect(thrown).toBeInstanceOf(ConfigError);
        expect(commands).toBe(0);
      }
    }
  });

  it("an unknown option or write option is a ValidationError at path '' before any command", async () => {
    const stats = statsAt("r22-opts");
    const calls: [string, () => Promise<unknown>][] = [
      ["top windw", () => stats.trending("s").top({ windw: "48h" } as never)],
      ["incr idempotencykey", () => stats.counter("c").incr("m", 1, { idempotencykey: "k" } as never)],
    ];
    for (const [what, call] of calls) {
      let thrown: unknown;
      const commands = await commandsOf(async () => {
        try {
          await call();
        } catch (error) {
          thrown = error;
        }
      });
      expect(thrown, what).toBeInstanceOf(ValidationError);
      expect((thrown as ValidationError).details?.[0]?.path, what).toBe("");
      expect(commands, what).toBe(0);
    }
  });

  // low, fixed: the library's errors told a library caller to call the service. An observation of a
  // histogram never configured was `NotFoundError: Histogram 'h' does not exist; create it first with
  // PUT /v1/histograms/h {"bucketWidth": ...}.`, and a union over too many entries said "read the
  // range instead (GET /v1/counters/{counter}/top with period, from and to)": a library user has no
  // such route. Both messages (shared by the service and the library) now name the operation in both
  // forms: the route and the library's method (src/histograms/scripts.ts `notFound`,
  // src/counters/union.ts `too_many_entries`).
  it("an unconfigured histogram's NotFoundError names the library's call, not only an HTTP route", async () => {
    const stats = statsAt("r22-msg");
    const error = await stats
      .histogram("h")
      .observe(1)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(lib.NotFoundError);
    expect((error as Error).message).toContain('histogram("h").configure(');
  });

  it("every exported error class is an EdgestatsError whose `name` is the class's own name", () => {
    const classes = Object.entries(lib).filter(
      ([, v]) => typeof v === "function" && (v === EdgestatsError || v.prototype instanceof EdgestatsError),
    );
    expect(classes.length).toBeGreaterThanOrEqual(10);
    for (const [name, Class] of classes) {
      const error = new (Class as new (arg: unknown) => EdgestatsError)(1);
      expect(error.name, name).toBe(name);
    }
  });
});
