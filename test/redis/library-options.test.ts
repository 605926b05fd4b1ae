/**
 * Every options object of the library refuses a field it does not know (src/library/inputs.ts):
 * a read's or list's options (`top({ windw: "24h" })`, `members({ limt: 5 })`, which the library
 * read with the defaults), a write's options (`idempotencykey`, which made the write
 * at-least-once without a word) and the constructor's settings (`prefx`, which wrote under "es").
 * A refusal sends nothing: the calls go through a client whose requests the local Upstash server
 * counts under a tag of their own, and that count stays 0. test/unit/library-options.test.ts
 * holds the names each method takes against the OpenAPI document.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, createRedis, Edgestats, ValidationError } from "../../src/index.ts";
import { QUERY_OPTIONS } from "../../src/library/inputs.ts";
import { libraryTest } from "../helpers/library.ts";
import { resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("libopts");
const tag = `libopts${Math.random().toString(36).slice(2, 8)}`;
const now = Date.UTC(2026, 10, 25, 12, 30);
const stats = new Edgestats({
  redis: createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}` }),
  prefix: lib.prefix,
  clock: () => now,
});

type Options = Record<string, unknown>;
const t = stats.trending("t");
const c = stats.counter("c");
const h = stats.histogram("h");
const p = stats.presence("r");
const b = stats.leaderboard("b");

/** Each method with query options, called with `o` (the unit test holds every such method in QUERY_OPTIONS). */
const READS: Record<keyof typeof QUERY_OPTIONS, (o: Options) => Promise<unknown>> = {
  "trending.top": (o) => t.top(o),
  "trending.member": (o) => t.member("m", o),
  "trending.rising": (o) => t.rising(o),
  "trending.history": (o) => t.history("m", o),
  "counter.top": (o) => c.top(o),
  "counter.bottom": (o) => c.bottom(o),
  "counter.member": (o) => c.member("m", o),
  "counter.range": (o) => c.range(o),
  "counter.sorted": (o) => c.sorted(o),
  "counter.remove": (o) => c.remove("m", o),
  "histogram.read": (o) => h.read(o),
  "presence.members": (o) => p.members(o),
  "presence.history": (o) => p.history(o),
  "leaderboard.get": (o) => b.get("p", o),
  "leaderboard.rank": (o) => b.rank(["p"], o),
  "leaderboard.page": (o) => b.page(o),
  "leaderboard.around": (o) => b.around("p", o),
  "stats.counters": (o) => stats.counters(o),
  "stats.histograms": (o) => stats.histograms(o),
  "stats.rooms": (o) => stats.rooms(o),
  "stats.boards": (o) => stats.boards(o),
  "stats.streamPage": (o) => stats.streamPage(o),
};

/** Each write, with a valid input, called with write options `o`. */
const WRITES: Record<string, (o: Options) => Promise<unknown>> = {
  "trending.record": (o) => t.record("a", o),
  "counter.incr": (o) => c.incr("a", 1, o),
  "counter.union": (o) => c.union({ sources: ["c"] }, o),
  "histogram.configure": (o) => h.configure({ bucketWidth: 1 }, o),
  "histogram.observe": (o) => h.observe(1, o),
  "presence.heartbeat": (o) => p.heartbeat("u", o),
  "leaderboard.configure": (o) => b.configure({}, o),
  "leaderboard.join": (o) => b.join("p", { name: "P" }, o),
  "leaderboard.increment": (o) => b.increment("p", 1, o),
  "leaderboard.set": (o) => b.set("p", 1, "replace", o),
  "leaderboard.score": (o) => b.score("p", { by: 1 }, o),
  "leaderboard.scores": (o) => b.scores([{ player: "p", by: 1 }], o),
};

/** The error `call` rejects with, and the requests and commands it sent (must be none). */
async function refusal(call: () => Promise<unknown>) {
  await resetStats(lib.target, tag);
  const error = await call().then(
    (v) => {
      throw new Error(`not refused: ${JSON.stringify(v)}`);
    },
    (e: unknown) => e as ValidationError,
  );
  const sent = await statsOf(lib.target, tag);
  return { error, sent: { requests: sent.requests, commands: sent.commands } };
}

const capitalised = (name: string) => `${name[0]!.toUpperCase()}${name.slice(1)}`;
const unrecognized = (names: string[]) =>
  `Unrecognized key${names.length > 1 ? "s" : ""}: ${names.map((n) => JSON.stringify(n)).join(", ")}`;

describe("read options", () => {
  it("the tagged client's requests are counted (so the zeros below are not vacuous)", async () => {
    await t.top({ window: "24h" }); // loads the script (a first EVALSHA is NOSCRIPT, then EVAL)
    await resetStats(lib.target, tag);
    await t.top({ window: "24h" });
    expect((await statsOf(lib.target, tag)).requests).toBe(1);
  });

  it("the task's examples: top({ windw }) and members({ limt }) are refused, nothing sent", async () => {
    const top = await refusal(() => t.top({ windw: "24h" } as never));
    expect(top.error).toBeInstanceOf(ValidationError);
    expect(top.error.code).toBe("invalid_request");
    expect(top.error.details).toEqual([{ in: "query", path: "", message: 'Unrecognized key: "windw"' }]);
    expect(top.sent).toEqual({ requests: 0, commands: 0 });
    const members = await refusal(() => p.members({ limt: 5 } as never));
    expect(members.error.details).toEqual([{ in: "query", path: "", message: 'Unrecognized key: "limt"' }]);
    expect(members.sent).toEqual({ requests: 0, commands: 0 });
  });

  // every name the method takes passes (given as undefined), each misspelt one (capitalised) is named
  it.each(Object.keys(READS) as (keyof typeof READS)[])("%s takes its names and refuses others", async (key) => {
    const names = [...QUERY_OPTIONS[key]];
    const options = Object.fromEntries([...names.map((n) => [n, undefined]), ...names.map((n) => [capitalised(n), 1])]);
    const { error, sent } = await refusal(() => READS[key](options));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.details).toEqual([{ in: "query", path: "", message: unrecognized(names.map(capitalised)) }]);
    expect(sent).toEqual({ requests: 0, commands: 0 });
  });

  it("null or a non-object as the options is a ValidationError (was a TypeError from inside), nothing sent", async () => {
    const nul = await refusal(() => c.top(null as never));
    expect(nul.error).toBeInstanceOf(ValidationError);
    expect(nul.error.details).toEqual([{ in: "query", path: "", message: "must be an object, not null" }]);
    const str = await refusal(() => stats.boards("10" as never));
    expect(str.error.details).toEqual([{ in: "query", path: "", message: "must be an object, not string" }]);
    expect([nul.sent, str.sent]).toEqual([
      { requests: 0, commands: 0 },
      { requests: 0, commands: 0 },
    ]);
  });

  it("a counter member's delete takes period/from/to only (its route has no aggregate)", async () => {
    const { error, sent } = await refusal(() => c.remove("m", { period: "day", aggregate: "max" } as never));
    expect(error.details).toEqual([{ in: "query", path: "", message: 'Unrecognized key: "aggregate"' }]);
    expect(sent).toEqual({ requests: 0, commands: 0 });
  });
});

describe("write options", () => {
  it.each(Object.keys(WRITES))("%s refuses a misspelt idempotencyKey, nothing sent", async (key) => {
    const { error, sent } = await refusal(() => WRITES[key]!({ idempotencykey: "k1" }));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.details).toEqual([{ in: "header", path: "", message: 'Unrecognized key: "idempotencykey"' }]);
    expect(sent).toEqual({ requests: 0, commands: 0 });
  });

  it("idempotencyKey itself is still taken: the second call is a replay", async () => {
    const first = await c.incr("x", 2, { idempotencyKey: "libopts-k" });
    const again = await c.incr("x", 2, { idempotencyKey: "libopts-k" });
    expect(again).toEqual({ ...first, replayed: true });
  });
});

describe("the constructor's settings", () => {
  it("an unknown setting, at the top or in trending / presence, is a ConfigError from new Edgestats", () => {
    const redis = lib.redis;
    expect(() => new Edgestats({ redis, prefx: "mine" } as never)).toThrow(
      new ConfigError('Edgestats options: Unrecognized key: "prefx".'),
    );
    expect(() => new Edgestats({ redis, trending: { retention: 24 } } as never)).toThrow(
      new ConfigError('Edgestats options (trending): Unrecognized key: "retention".'),
    );
    expect(() => new Edgestats({ redis, presence: { timeout: 60 } } as never)).toThrow(
      new ConfigError('Edgestats options (presence): Unrecognized key: "timeout".'),
    );
    expect(() => new Edgestats({ redis, presence: null } as never)).toThrow(ConfigError);
    // every documented setting is still taken
    const all = new Edgestats({
      redis,
      prefix: lib.prefix,
      clock: () => now,
      trending: { retentionHours: 48, keep: 100, compactBatches: 10 },
      presence: { timeoutSeconds: 60 },
    });
    expect(all.config).toMatchObject({ keyPrefix: lib.prefix, trendingRetentionHours: 48, presenceTimeoutSeconds: 60 });
  });
});
