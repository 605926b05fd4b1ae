/**
 * Review 9: the library's limits (`Edgestats`, the feature functions) exactly at and one past each,
 * the limits only many stored entries reach (union entries and sources, the sorted cap, histogram
 * bucket caps, the 200,000-entry read cap), the same limits through the typed client (the real app
 * in Node), and the docs' numbers against the constants. At the limit: accepted, right result; past
 * it: a ValidationError naming the limit and nothing written (every key, value and expiry of the
 * prefix compared).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { createClient } from "../../src/client.ts";
import * as counterLimits from "../../src/counters/limits.ts";
import { MAX_UNION_SOURCES } from "../../src/counters/validate.ts";
import * as hv from "../../src/histograms/validate.ts";
import { MAX_AROUND, MAX_META_BYTES, MAX_PAGE_LIMIT } from "../../src/leaderboards/validate.ts";
import { ConfigError, Edgestats, RejectedError, ValidationError } from "../../src/index.ts";
import { changeScores } from "../../src/leaderboards/leaderboards.ts";
import { top as trendingTop } from "../../src/trending/index.ts";
import { MAX_DEPTH, MAX_TOP_N } from "../../src/trending/validate.ts";
import { MAX_BATCH, MAX_MEMBER_BYTES } from "../../src/validation.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { MAX_WEBHOOKS, type WebhookInput } from "../../src/webhooks/validate.ts";
import { keyValues } from "../helpers/key-snapshot.ts";
import { libraryTest } from "../helpers/library.ts";

const T0 = Date.UTC(2026, 10, 22, 12, 30);
const lib = libraryTest("r9-limits", { timeoutMs: 30_000 });
const now = T0;
const stats = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => now });
const n = <T>(count: number, f: (i: number) => T): T[] => Array.from({ length: count }, (_, i) => f(i));

/** Every key of the prefix with its value and expiry (test/helpers/key-snapshot.ts). */
const snapshot = (prefix = lib.prefix) => keyValues(lib.target, prefix);

/** A refused library call: a ValidationError whose message or details name `limit`; nothing written. */
async function refused(
  call: () => Promise<unknown>,
  limit: RegExp,
  code = "invalid_request",
  kind: typeof ValidationError | typeof RejectedError = ValidationError,
): Promise<void> {
  const before = await snapshot();
  const error = await call().then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(kind);
  const v = error as ValidationError;
  expect(v.code).toBe(code);
  expect(JSON.stringify({ message: v.message, details: v.details })).toMatch(limit);
  expect(await snapshot()).toEqual(before);
}

describe("the library's batches, names, members and numbers, at and one past each limit", () => {
  const name64 = "L" + "b".repeat(63);
  const member256 = "é".repeat(128); // 2 UTF-8 bytes each
  it("batches of 1,000 are taken, 1,001 refused whole", async () => {
    await stats.histogram("lb-h").configure({ bucketWidth: 1 });
    await stats.leaderboard("lb-b").join("p", { name: "p" });
    const writes: [(size: number) => Promise<unknown>, (r: any) => void][] = [
      [(k) => stats.trending("lb-t").record(n(k, (i) => ({ member: `m${i}` }))), (r) => expect(r.accepted).toBe(1000)],
      [
        (k) => stats.counter("lb-c").incr(n(k, (i) => ({ member: `m${i}` }))),
        (r) => expect(r.results).toHaveLength(1000),
      ],
      [(k) => stats.histogram("lb-h").observe(n(k, (i) => i)), (r) => expect(r.accepted).toBe(1000)],
      [(k) => stats.presence("lb-r").heartbeat(n(k, (i) => `i${i}`)), (r) => expect(r.online).toBe(1000)],
      [(k) => stats.leaderboard("lb-b").rank(n(k, (i) => `q${i}`)), (r) => expect(r.unknown).toHaveLength(1000)],
    ];
    for (const [write, check] of writes) {
      await refused(() => write(MAX_BATCH + 1), /1000/);
      check(await write(MAX_BATCH));
    }
  });

  it("names of 64 characters and members of 256 UTF-8 bytes are taken; 65 and 257 are refused", async () => {
    await refused(() => stats.counter(name64 + "b").incr("m"), /\{0,63\}/);
    await refused(() => stats.trending(name64 + "b").record("m"), /\{0,63\}/);
    await refused(() => stats.presence(name64 + "b").heartbeat("i"), /\{0,63\}/);
    await refused(() => stats.counter("lm").incr(member256 + "x"), new RegExp(`${MAX_MEMBER_BYTES} UTF-8 bytes`));
    await refused(() => stats.trending("lm").record(member256 + "x"), /256 UTF-8 bytes/);
    await refused(() => stats.presence("lm").heartbeat(member256 + "x"), /256 UTF-8 bytes/);
    expect((await stats.counter(name64).incr(member256)).results).toEqual([{ member: member256, score: 1 }]);
    expect((await stats.trending(name64).record(member256)).accepted).toBe(1);
    expect((await stats.presence(name64).heartbeat(member256)).online).toBe(1);
  });

  it("increments ±1e12, ttl 1..10 years, scores ±1e15 and meta 4,096 bytes: the same bounds as HTTP", async () => {
    await refused(() => stats.counter("ln").incr("a", 1e12 + 1), /1e12/);
    await refused(() => stats.counter("ln").incr({ member: "a", ttl: counterLimits.MAX_TTL_SECONDS + 1 }), /316224000/);
    await refused(() => stats.trending("ln").record({ member: "a", count: 1e12 + 1 }), /1e\+?12|1000000000000/);
    await refused(() => stats.leaderboard("ln").join("p", { name: "p", score: 1e15 + 1 }), /1e\+?15|1000000000000000/);
    const meta = (bytes: number) => ({ s: "x".repeat(bytes - '{"s":""}'.length) });
    await refused(() => stats.leaderboard("ln").join("p", { name: "p", meta: meta(MAX_META_BYTES + 1) }), /4096/);
    expect((await stats.counter("ln").incr("a", 1e12)).results[0]!.score).toBe(1e12);
    expect(
      (await stats.counter("ln").incr({ member: "t", ttl: counterLimits.MAX_TTL_SECONDS })).results[0]!.score,
    ).toBe(1);
    expect((await stats.trending("ln").record({ member: "a", count: 1e12 })).accepted).toBe(1);
    await stats.leaderboard("ln").join("p", { name: "p", score: 1e15, meta: meta(MAX_META_BYTES) });
    expect(await stats.leaderboard("ln").get("p")).toMatchObject({ score: 1e15, meta: meta(MAX_META_BYTES) });
  });

  it("ttl 1 s is taken (under a prefix of its own: the key expires in 1 s), 0 is refused", async () => {
    await refused(() => stats.counter("ttl0").incr({ member: "c", ttl: 0 }), /from 1 to 316224000/);
    const own = new Edgestats({ redis: lib.redis, prefix: lib.ctx(now, "r9-ttl1").prefix, clock: () => now });
    expect((await own.counter("t").incr({ member: "c", ttl: 1 })).results).toEqual([{ member: "c", score: 1 }]);
  });

  it("a bucket time exactly its ttl old (its hour ended ttl s ago) is taken; a ttl 1 s shorter is refused naming it", async () => {
    // now 12:30: the 11:00 hour ended 1,800 s ago
    const item = (ttl: number) => ({ member: "m", period: "hour" as const, at: Date.UTC(2026, 10, 22, 11, 15), ttl });
    await refused(() => stats.counter("ttl-at").incr(item(1799)), /ttl \(1799 s\)/);
    expect((await stats.counter("ttl-at").incr(item(1800))).results).toEqual([{ member: "m", score: 1 }]);
  });

  it("read options: trending n 100 and the threshold read's depth 2,048; leaderboard page 100 and k 50", async () => {
    const ctx = lib.ctx(now);
    const settings = { retentionHours: 50 };
    await refused(() => stats.trending("lb-t").top({ n: MAX_TOP_N + 1 }), /100/);
    await refused(() => trendingTop(ctx, "lb-t", { ...settings, maxDepth: MAX_DEPTH + 1 }), /2048/);
    expect((await stats.trending("lb-t").top({ n: MAX_TOP_N })).items).toHaveLength(100);
    expect(
      (await trendingTop(ctx, "lb-t", { ...settings, firstDepth: MAX_DEPTH, maxDepth: MAX_DEPTH })).items,
    ).toHaveLength(10);
    await refused(() => stats.leaderboard("lb-b").page({ limit: MAX_PAGE_LIMIT + 1 }), /100/);
    await refused(() => stats.leaderboard("lb-b").around("p", { k: MAX_AROUND + 1 }), /50/);
    expect((await stats.leaderboard("lb-b").page({ limit: MAX_PAGE_LIMIT })).items).toHaveLength(1);
    expect((await stats.leaderboard("lb-b").around("p", { k: MAX_AROUND })).items).toHaveLength(1);
  });

  it("presence timeoutSeconds 5..86,400 (PRESENCE_TIMEOUT_SECONDS): the ends work, one past is a ConfigError naming both", () => {
    for (const timeoutSeconds of [5, 86_400])
      expect(new Edgestats({ redis: lib.redis, presence: { timeoutSeconds } }).config.presenceTimeoutSeconds).toBe(
        timeoutSeconds,
      );
    for (const timeoutSeconds of [4, 86_401])
      expect(() => new Edgestats({ redis: lib.redis, presence: { timeoutSeconds } })).toThrow(
        new ConfigError(`PRESENCE_TIMEOUT_SECONDS must be an integer from 5 to 86400; it is '${timeoutSeconds}'.`),
      );
  });
});

describe("limits only many stored entries reach", () => {
  it("a rollup of 100 sources holding exactly 100,000 entries is stored; 100,001 entries or 101 sources are refused", async () => {
    const sources = n(MAX_UNION_SOURCES, (i) => `src${i}`);
    for (const s of sources) await stats.counter(s).incr(n(1000, (i) => ({ member: `m${i}` })));
    await refused(() => stats.counter("roll").union({ sources: [...sources, "src0"] }), /1 to 100 sources/);
    const at = await stats.counter("roll").union({ sources });
    expect(at).toMatchObject({ members: 1000 });
    expect((await stats.counter("roll").member("m7")).score).toBe(100);
    await stats.counter("src0").incr("one-more");
    await refused(
      () => stats.counter("roll").union({ sources }),
      new RegExp(String(counterLimits.MAX_UNION_ENTRIES)),
      "too_many_entries",
    );
  });

  it("rollup weights ±1e12 are taken, 1e12 + 1 is refused", async () => {
    await refused(() => stats.counter("roll-w").union({ sources: ["src1"], weights: [1e12 + 1] }), /1e12/);
    expect(await stats.counter("roll-w").union({ sources: ["src1"], weights: [-1e12] })).toMatchObject({
      members: 1000,
    });
    expect((await stats.counter("roll-w").member("m1")).score).toBe(-1e12);
  });

  it("a rollup source expanding to 1,000 hour buckets is taken; 1,001 are refused naming 1000", async () => {
    const hour = Math.floor(now / 3_600_000) * 3_600_000;
    await stats.counter("hours").incr({ member: "m", period: "hour" });
    const source = (hours: number) => ({
      counter: "hours",
      period: "hour" as const,
      from: new Date(hour - (hours - 1) * 3_600_000).toISOString(),
      to: new Date(hour).toISOString(),
    });
    await refused(() => stats.counter("roll-h").union({ sources: [source(1001)] }), /1001 keys; at most 1000/);
    expect(await stats.counter("roll-h").union({ sources: [source(1000)] })).toMatchObject({ members: 1 });
  });

  it("sorted reads 10,000 members; at 10,001 it is refused (too_many_members) naming 10000", async () => {
    for (let k = 0; k < 10; k++) await stats.counter("many").incr(n(1000, (i) => ({ member: String(k * 1000 + i) })));
    const all = await stats.counter("many").sorted({ by: "member" });
    expect(all.items).toHaveLength(counterLimits.MAX_SORTED_MEMBERS);
    expect(all.items.at(-1)).toMatchObject({ member: "9999" });
    await stats.counter("many").incr("10000");
    await refused(() => stats.counter("many").sorted(), /at most 10000/, "too_many_members");
  });

  it("a histogram day takes 5,000 distinct buckets, refuses the 5,001st; a read returns 20,000 and refuses 20,001", async () => {
    const h = stats.histogram("caps");
    await h.configure({ bucketWidth: 1 });
    const day = (d: number) => Date.UTC(2026, 10, 18 + d, 1);
    for (let d = 0; d < 4; d++)
      for (let k = 0; k < 5; k++) await h.observe(n(1000, (i) => ({ value: d * 10_000 + k * 1000 + i, at: day(d) })));
    await refused(() => h.observe({ value: 9_999, at: day(0) }), /5000 distinct buckets/);
    expect((await h.observe({ value: 4_999, at: day(0) })).accepted).toBe(1); // a bucket it holds: fine
    const at = await h.read({ from: "2026-11-18", to: "2026-11-22" });
    expect(at.buckets).toHaveLength(hv.MAX_READ_BUCKETS);
    expect(at.count).toBe(20_001);
    await h.observe({ value: 99_999, at: day(4) - 3_600_000 + 1 }); // 2026-11-22 00:00:00.001, a 20,001st bucket
    await refused(() => h.read({ from: "2026-11-18", to: "2026-11-22" }), /20000/);
    expect((await h.read({ from: "2026-11-18", to: "2026-11-21" })).buckets).toHaveLength(20_000);
  });

  it("a value exactly 1e12 buckets from zero is observed; one bucket further is refused", async () => {
    const h = stats.histogram("far");
    await h.configure({ bucketWidth: 1 });
    await refused(() => h.observe(1e12 + 1), /1000000000000|1e\+?12/);
    await refused(() => h.observe(-1e12 - 1), /1000000000000|1e\+?12/);
    expect((await h.observe([1e12, -1e12])).accepted).toBe(2);
    expect(await h.read()).toMatchObject({ count: 2, min: -1e12, max: 1e12 });
  });
});

describe("leaderboards: maxIncrement per request and keepSeasons", () => {
  it("guards: a score at minScore/maxScore and a change of exactly maxIncrement pass; past them score_rejected (422), nothing written", async () => {
    const b = stats.leaderboard("guard");
    await b.configure({ minScore: -100, maxScore: 100, maxIncrement: 10 });
    await b.join("p", { name: "p" });
    const rejected = (call: () => Promise<unknown>, guard: RegExp) =>
      refused(call, guard, "score_rejected", RejectedError);
    await rejected(() => b.increment("p", 10.5), /maxIncrement/);
    await rejected(() => b.increment("p", -10.5), /maxIncrement/);
    expect((await b.increment("p", 10)).score).toBe(10);
    expect((await b.increment("p", -10)).score).toBe(0);
    await rejected(() => b.set("p", 100.5), /maxScore|minScore/);
    await rejected(() => b.set("p", -100.5), /maxScore|minScore/);
    expect((await b.set("p", 100)).score).toBe(100);
    expect((await b.set("p", -100)).score).toBe(-100);
  });

  it("scores stay within ±1e15: set −1e15 holds, a change to −1e15 − 1 is refused and the score stays", async () => {
    const b = stats.leaderboard("edge-score");
    await b.join("p", { name: "p" });
    expect((await b.set("p", -1e15)).score).toBe(-1e15);
    await refused(() => b.increment("p", -1), /1e\+?15|1000000000000000/);
    expect((await b.get("p")).score).toBe(-1e15);
  });

  it("keepSeasons 1..52: 52 is taken, 53 and 0 are refused naming the range", async () => {
    const b = stats.leaderboard("keep52");
    await refused(() => b.configure({ reset: "daily", keepSeasons: 53 }), /1 to 52/);
    await refused(() => b.configure({ reset: "daily", keepSeasons: 0 }), /1 to 52/);
    expect(await b.configure({ reset: "daily", keepSeasons: 52 })).toMatchObject({ keepSeasons: 52 });
  });

  it("maxIncrement bounds the sum of |by| per player per request: a sum of exactly 10 passes, 11 is 422-refused", async () => {
    const b = stats.leaderboard("guard-sum");
    await b.configure({ maxIncrement: 10 });
    await b.join("p", { name: "p" });
    await b.join("q", { name: "q" });
    const change = (items: { player: string; by: number }[]) => changeScores(lib.ctx(now), "guard-sum", items);
    const before = await snapshot();
    const error = await change([
      { player: "p", by: 6 },
      { player: "q", by: 10 },
      { player: "p", by: -5 },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RejectedError);
    expect((error as RejectedError).message).toMatch(/maxIncrement 10/);
    expect(await snapshot()).toEqual(before);
    const ok = await change([
      { player: "p", by: 6 },
      { player: "q", by: 10 },
      { player: "p", by: -4 },
    ]);
    expect(ok.results.map((r) => [r.player, r.score])).toEqual([
      ["p", 6],
      ["q", 10],
      ["p", 2],
    ]);
  });

  it("keepSeasons 2: the seasons list holds the current day and the 2 before it, never a third", async () => {
    let clock = Date.UTC(2026, 10, 18, 12);
    const daily = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => clock });
    const b = daily.leaderboard("keep2");
    await b.configure({ reset: "daily", keepSeasons: 2 });
    await b.join("p", { name: "p" });
    for (let d = 0; d < 5; d++, clock += 86_400_000) await b.increment("p", d + 1);
    clock -= 86_400_000; // 2026-11-22, where the last write went
    const { seasons } = await b.seasons();
    expect(seasons.map((s: { id: string }) => s.id)).toEqual(["2026-11-22", "2026-11-21", "2026-11-20"]);
    expect((await b.get("p", { season: "2026-11-20" })).score).toBe(3);
  });
});

describe("webhooks (the same checks and script as PUT /v1/webhooks/{name}, whose 400 carries these messages)", () => {
  const hook = (extra: Record<string, unknown> = {}) =>
    ({
      url: "https://example.com/hook",
      events: ["trending.rising"],
      secret: "s".repeat(16),
      ...extra,
    }) as WebhookInput;
  const put = (name: string, extra: Record<string, unknown> = {}) =>
    webhooks.put(lib.ctx(now), name, hook(extra), { allowLocalHttp: false });

  it("field bounds: secret 16..256, url 2,048 characters, n 1..100, threshold 0..1e6", async () => {
    const url = (length: number) => "https://example.com/" + "a".repeat(length - 20);
    const past: [Record<string, unknown>, RegExp][] = [
      [{ secret: "s".repeat(15) }, /16\.\.256/],
      [{ secret: "s".repeat(257) }, /16\.\.256/],
      [{ url: url(2049) }, /2048/],
      [{ events: ["trending.entered"], filter: { stream: "s" }, n: 101 }, /100/],
      [{ threshold: 1e6 + 1 }, /1000000|1e\+?6/],
    ];
    for (const [extra, limit] of past) await refused(() => put("w-fields", extra), limit);
    expect((await put("w-fields", { secret: "s".repeat(256), url: url(2048), threshold: 1e6 })).created).toBe(true);
    const n100 = await put("w-fields", { events: ["trending.entered"], filter: { stream: "s" }, n: 100 });
    expect(n100.webhook).toMatchObject({ n: 100 });
  });

  it("20 webhooks are taken; the 21st is refused naming 20, and replacing one of the 20 still works", async () => {
    const { webhooks: listed } = await webhooks.list(lib.ctx(now));
    for (let i = listed.length; i < MAX_WEBHOOKS; i++) expect((await put(`w${i}`)).created).toBe(true);
    await refused(() => put("w-one-more"), /at most 20 webhooks/);
    expect((await put("w19", { threshold: 5 })).created).toBe(false);
    expect((await webhooks.list(lib.ctx(now))).webhooks).toHaveLength(MAX_WEBHOOKS);
  });
});

describe("the typed client (the real app) refuses exactly where the library does", () => {
  const KEYS = { ingest: "review9-ingest-key-01", read: "review9-read-key-0001", admin: "review9-admin-key-001" };
  const app = createApp({ now: () => now });
  const env = lib.appEnv(KEYS);
  const client = createClient({
    baseUrl: "http://edgestats.test",
    key: KEYS.admin,
    backoffMs: () => 0,
    fetch: (request) => Promise.resolve(app.request(request, undefined, env)),
  });
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => "ok",
      (e: { code?: string; status?: number }) => `${e.status ?? 400} ${e.code ?? "?"}`,
    );
  // [what, library call, client call]: each pair at the limit and one past it
  const pairsOf: [string, (k: number) => Promise<unknown>, (k: number) => Promise<unknown>, number, number][] = [
    [
      "counter top n",
      (k) => stats.counter("many").top({ n: k }),
      (k) => client.counters.top("many", { n: k }),
      1000,
      1001,
    ],
    [
      "counter range limit",
      (k) => stats.counter("many").range({ limit: k }),
      (k) => client.counters.range("many", { limit: k }),
      1000,
      1001,
    ],
    [
      "counter incr by",
      (k) => stats.counter("cl").incr("a", k),
      (k) => client.counters.incr("cl", { member: "a", by: k }),
      1e12,
      1e12 + 1,
    ],
    ["counter sorted (members)", () => stats.counter("many").sorted(), () => client.counters.sorted("many"), 0, 0],
    [
      "counters list offset",
      (k) => import("../../src/counters/index.ts").then((c) => c.list(lib.ctx(now), { offset: k })),
      (k) => client.counters.list({ offset: k }),
      1_000_000,
      1_000_001,
    ],
    [
      "histogram top",
      (k) => stats.histogram("caps").read({ top: k, from: "2026-11-18", to: "2026-11-21" }),
      (k) => client.histograms.read("caps", { top: k, from: "2026-11-18", to: "2026-11-21" }),
      100,
      101,
    ],
    [
      "histogram retentionDays",
      (k) => stats.histogram("cl-h").configure({ bucketWidth: 1, retentionDays: k }),
      (k) => client.histograms.configure("cl-h", { bucketWidth: 1, retentionDays: k }),
      400,
      401,
    ],
    [
      "trending top n",
      (k) => stats.trending("lb-t").top({ n: k }),
      (k) => client.trending.top("lb-t", { n: k }),
      100,
      101,
    ],
    [
      "leaderboard page limit",
      (k) => stats.leaderboard("lb-b").page({ limit: k }),
      (k) => client.leaderboards.page("lb-b", { limit: k }),
      100,
      101,
    ],
    [
      "presence members limit",
      (k) => stats.presence("lb-r").members({ limit: k }),
      (k) => client.presence.members("lb-r", { limit: k }),
      1000,
      1001,
    ],
  ];
  it.each(pairsOf)("%s", async (_what, library, viaClient, at, past) => {
    const [libAt, clientAt] = [await outcome(library(at)), await outcome(viaClient(at))];
    const [libPast, clientPast] = [await outcome(library(past)), await outcome(viaClient(past))];
    expect({ libAt, libPast }).toEqual({ libAt: clientAt, libPast: clientPast });
    if (at !== past)
      expect({ at: libAt, past: libPast }).toMatchObject({ at: "ok", past: expect.stringMatching(/^400 /) });
  });
});

describe("the docs state the limits the code enforces", () => {
  const doc = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), "utf8").replace(/\s+/g, " ");
  const fmt = (v: number) => v.toLocaleString("en-US");
  // [file, the sentence that states it, with {} for the constant]
  const stated: [string, string, number][] = [
    ["docs/webhooks.md", "At most {} webhooks", MAX_WEBHOOKS],
    ["docs/leaderboards.md", "at most {} bytes as JSON", MAX_META_BYTES],
    ["docs/leaderboards.md", "`limit` 1..{}", MAX_PAGE_LIMIT],
    ["docs/counters.md", "limited to {} buckets", counterLimits.MAX_RAW_BUCKETS],
    ["docs/counters.md", "past {} of them", counterLimits.MAX_DELETE_KEYS],
    ["docs/counters.md", "**`MAX_UNION_ENTRIES` = {}**", counterLimits.MAX_UNION_ENTRIES],
    ["docs/counters.md", "At most {} members", counterLimits.MAX_SORTED_MEMBERS],
    ["docs/counters.md", "up to {} sources", MAX_UNION_SOURCES],
    ["docs/counters.md", "most {} keys", counterLimits.MAX_UNION_KEYS],
    ["README.md", "at most {} (`MAX_UNION_MEMBERS`", counterLimits.MAX_UNION_MEMBERS],
    ["docs/histograms.md", "at most {} distinct buckets per histogram per day", hv.MAX_BUCKETS_PER_DAY],
    ["docs/histograms.md", "at most {} distinct buckets (`MAX_READ_BUCKETS`)", hv.MAX_READ_BUCKETS],
    ["docs/histograms.md", "(`MAX_UNION_ENTRIES`, {})", hv.MAX_UNION_ENTRIES],
    ["docs/histograms.md", "at most {} buckets from zero", 1e12],
    ["README.md", "(`n` 1..{}", MAX_TOP_N],
  ];
  it.each(stated)("%s: %s", (file, sentence, value) => {
    const text = doc(file);
    const variants = [fmt(value), String(value), value === 1e12 ? "1e12" : fmt(value)];
    expect(
      variants.some((v) => text.includes(sentence.replace("{}", v))),
      `${sentence} with ${value}`,
    ).toBe(true);
  });

  // FIXED (review 9: README, API in brief). Finding (low): the body guard refuses JSON nested deeper than 16 levels (400 malformed_json,
  // functions/middleware/body.ts MAX_DEPTH), and a leaderboard `meta` object (documented only as
  // "a JSON object of at most 4,096 bytes") reaches it at 15 levels of its own; no doc states it
  // (the worker test pins the 16/17 edge). Fix: one line in /work/shared/API.md's common rules or
  // README "API in brief": "JSON nested deeper than 16 levels: 400 malformed_json".
  it("a doc states the JSON nesting limit (16 levels) a leaderboard meta can reach", () => {
    const all = ["README.md", "docs/leaderboards.md", "docs/guarantees.md"].map(doc).join(" ");
    expect(all).toMatch(/(nest|deep)[^.]{0,60}16|16 levels/);
  });

  // FIXED (review 9: docs/counters.md's table; /openapi.json states it too). Finding (low): counter reads refuse `n` (top, bottom) and `limit` (range) past 1,000
  // (src/counters/reads.ts MAX_RANKED; the HTTP schema says the same), but neither docs/counters.md,
  // README nor the OpenAPI document (no query bounds at all: the worker review9 file) states it;
  // a user learns it from the 400. Fix: "`n` 1..1,000" and "`limit` 1..1,000" in docs/counters.md's table.
  it("docs/counters.md states the 1..1,000 bound of top/bottom `n` and range `limit`", () => {
    const text = doc("docs/counters.md");
    expect(text).toMatch(/`n` (1\.\.|≤ )1,000/);
    expect(text).toMatch(/`limit` (1\.\.|≤ )1,000[^,]*range|range[^|]*`limit` (1\.\.|≤ )1,000/);
  });

  // FIXED (review 9: each README row states its range). Finding (low): every numeric Worker var is range-checked by src/config.ts (`int(...)`; out of
  // range is a 500 config_error on every request), but README's configuration table states the range
  // of PRESENCE_ID_HORIZON_DAYS only. An operator setting PRESENCE_TIMEOUT_SECONDS=90000 (25 h) or
  // TRENDING_CACHE_SECONDS=7200 learns the bound from a broken deployment. Fix: add each range
  // (from readConfig) to its README row, as PRESENCE_ID_HORIZON_DAYS has "2..3650".
  it("README's configuration table states the range src/config.ts enforces for each numeric var", () => {
    const ranges: [string, string][] = [
      ["TRENDING_RETENTION_HOURS", "2..9600"],
      ["TRENDING_CACHE_SECONDS", "0..3600"],
      ["PRESENCE_TIMEOUT_SECONDS", "5..86400"],
      ["REDIS_TIMEOUT_MS", "100..60000"],
      ["RATE_LIMIT_PER_10S", "0..1000000"],
      ["PRESENCE_ID_HORIZON_DAYS", "2..3650"],
    ];
    const rows = readFileSync(new URL("../../README.md", import.meta.url), "utf8").split("\n");
    const missing = ranges.filter(([name, range]) => {
      const row = rows.find((r) => r.startsWith(`| \`${name}\``)) ?? "";
      return !row.replace(/,/g, "").includes(range);
    });
    expect(missing).toEqual([]);
  });
});

describe("the read bounds of unions (issue 15), at and one past", () => {
  it("a counter range read unions 20,000 distinct members; at 20,001 it is refused naming 20000, also after a cached union", async () => {
    const c = stats.counter("umem");
    for (let d = 1; d <= 20; d++)
      await c.incr(n(1000, (i) => ({ member: `d${d}-${i}`, period: "day" as const, at: Date.UTC(2026, 10, d, 1) })));
    const range = { period: "day" as const, from: "2026-11-01", to: "2026-11-21", limit: 10 };
    const at = await c.range(range);
    expect(at.count).toBe(counterLimits.MAX_UNION_MEMBERS);
    await c.incr({ member: "one-more", period: "day", at: Date.UTC(2026, 10, 21, 1) });
    await refused(() => c.range(range), new RegExp(String(counterLimits.MAX_UNION_MEMBERS)), "too_many_entries");
  });

  it("a histogram read merges 200,000 entries (40 days of the same 5,000 buckets); 200,001 are refused naming 200000", async () => {
    const h = stats.histogram("entries");
    await h.configure({ bucketWidth: 1 });
    const days = n(40, (d) => Date.UTC(2026, 9, 2 + d, 1)); // 2026-10-02 .. 2026-11-10: no whole month
    for (const day of days)
      for (let k = 0; k < 5; k++) await h.observe(n(1000, (i) => ({ value: k * 1000 + i, at: day })));
    // the range takes one day more, still empty, for the 200,001st entry (the 40 days are at their cap)
    const range = { from: "2026-10-02", to: "2026-11-11" };
    const at = await h.read(range);
    expect({ count: at.count, buckets: at.buckets.length }).toEqual({ count: 200_000, buckets: 5000 });
    await h.observe({ value: 0, at: Date.UTC(2026, 10, 11, 1) });
    await refused(() => h.read(range), new RegExp(String(hv.MAX_UNION_ENTRIES)));
  });

  it("a member delete over 60 days of hours (≤ 1,746 keys) is taken; over 61 days (> 1,750) it is refused naming 1750", async () => {
    const c = stats.counter("dkeys");
    const hours = (days: number, start: number) => n(days * 24, (i) => start + i * 3_600_000);
    const write = async (member: string, at: number[]) => {
      for (let i = 0; i < at.length; i += 1000)
        await c.incr(at.slice(i, i + 1000).map((t) => ({ member, period: "hour" as const, at: t })));
    };
    const sep1 = Date.UTC(2026, 8, 1);
    await write("sixty", hours(60, sep1));
    await write("sixty-one", hours(61, sep1));
    const over = (days: number) => ({
      period: "hour" as const,
      from: new Date(sep1).toISOString(),
      to: new Date(sep1 + (days * 24 - 1) * 3_600_000).toISOString(),
    });
    await refused(() => c.remove("sixty-one", over(61)), new RegExp(String(counterLimits.MAX_DELETE_KEYS)));
    expect(await c.remove("sixty", over(60))).toBeGreaterThanOrEqual(60 * 24);
    await expect(c.member("sixty", over(60))).rejects.toMatchObject({ code: "not_found" });
    expect((await c.member("sixty-one", over(61))).score).toBe(61 * 24);
  });
});

describe("trending member rank depth (MEMBER_RANK_DEPTH = 1,000)", () => {
  const setUp = async (stream: string, above: number) => {
    const t = stats.trending(stream);
    await t.record({ member: "x", count: 1 });
    await t.record(n(above, (i) => ({ member: `a${i}`, count: 5 })));
    return t;
  };

  it("999 members above it: exact rank 1,000; 1,000 above: bounds that meet, exact (1,001)", async () => {
    const exact = await (await setUp("depth-999", 999)).member("x", { window: 1 });
    expect(exact).toMatchObject({ count: 1, rank: 1000 });
    expect(exact).not.toHaveProperty("rankExact", false);
    const bounds = await (await setUp("depth-1000", 1000)).member("x", { window: 1 });
    // bounds that meet (rank = rankMax = 1,001) are an exact rank since review 9
    expect(bounds).toMatchObject({ count: 1, rank: 1001, rankExact: true });
    expect(bounds).not.toHaveProperty("rankMax");
  });

  // FIXED (review 9, src/trending/trending.ts). Finding (low): README says "the rank is exact when at most 1,000 members per set could rank above
  // it", but the depth counts the member itself (docs/trending.md: "ranges hold at most 1,000 members a
  // set"), so 1,000 members above it already give `rankExact: false`, here with rank = rankMax = 1,001:
  // bounds that pin the rank, reported as inexact. Fix: when rank == rankMax report the rank as exact
  // (src/trending/trending.ts member result), and say "at most 999 above it" in README, or read depth + 1.
  it("README: with 1,000 members above it the rank is exact", async () => {
    const res = await (await setUp("depth-readme", 1000)).member("x", { window: 1 });
    expect(res).toMatchObject({ rank: 1001 });
    expect(res).not.toHaveProperty("rankExact", false);
  });
});
