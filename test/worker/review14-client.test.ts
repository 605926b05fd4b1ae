/**
 * Review 14: `edgestats/client` against the Worker in workerd (the Hono app, app.request with the
 * test bindings, the real local queue) and the library (`Edgestats`, the library's own Redis client)
 * on the same database and prefix. What one writes, the other reads; the same operations leave the
 * same keys; and what the contract offers on the wire (CSV, `Prefer: respond-async`) the client
 * can ask for. `it.fails` marks a confirmed bug (comment: severity, what is wrong, the fix).
 */
import { afterAll, describe, expect, it } from "vitest";
import { EdgestatsError } from "../../src/client.ts";
import { Edgestats, RejectedError } from "../../src/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { keySnapshot } from "../helpers/key-snapshot.ts";
import { workerClient, type Sent } from "../helpers/recording-fetch.ts";
import { cleanedUpAfterAll, createTestApi, TEST_KEYS, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const start = Date.UTC(2026, 10, 25, 12, 30);

/** The client on `api`'s Worker (workerd, its bindings and prefix), with `key`, recording each request. */
const clientOf = (api: TestApi, key: string = TEST_KEYS.admin, seen: Sent[] = []) => workerClient(api, seen, { key });

/** The library on `api`'s database and prefix, on `api`'s clock. */
function libraryOf(api: TestApi) {
  return new Edgestats({
    redis: createRedis({ url: api.target.url, token: api.target.token }),
    prefix: api.prefix,
    clock: () => api.now,
  });
}

/**
 * Every key under the api's prefix with its contents, the prefix replaced. Without the idempotency
 * records (`:idem:`): the client sends an Idempotency-Key with every write, so the service keeps
 * one per call; the library keeps one only when asked (`idempotencyKey`).
 */
async function snapshotOf(api: TestApi): Promise<string[]> {
  return (await keySnapshot(api.target, api.prefix))
    .filter((line) => !line.startsWith(`${api.prefix}:idem:`))
    .map((line) => line.split(api.prefix).join("<prefix>"));
}

describe("the library and the Worker on one prefix", () => {
  // Passing: what test/redis/client.test.ts checks for a leaderboard and a stream one way, for
  // every feature both ways, through the Worker in workerd.
  it("what the library writes the client reads, and what the client writes the library reads", async () => {
    const api = track(createTestApi({ label: "r14-both", start }));
    const client = clientOf(api);
    const stats = libraryOf(api);

    await stats.trending("s").record([{ member: "lib", count: 3 }]);
    await client.trending.record("s", [{ member: "http", count: 2 }]);
    expect((await client.trending.top("s")).items).toEqual((await stats.trending("s").top()).items);
    expect((await stats.trending("s").top()).items.map((i) => [i.member, i.count])).toEqual([
      ["lib", 3],
      ["http", 2],
    ]);

    await stats.counter("c").incr({ member: "a", by: 4, period: "day" });
    await client.counters.incr("c", { member: "a", by: 1, period: "day" });
    expect(await stats.counter("c").member("a", { period: "day" })).toEqual(
      await client.counters.member("c", "a", { period: "day" }),
    );
    expect((await client.counters.member("c", "a", { period: "day" })).score).toBe(5);

    await stats.histogram("h").configure({ bucketWidth: 10, unit: "ms" });
    await client.histograms.observe("h", [5, 15, 25]);
    await stats.histogram("h").observe([35]);
    expect(await client.histograms.read("h")).toEqual(await stats.histogram("h").read());
    expect((await stats.histogram("h").read()).count).toBe(4);

    await stats.presence("room").heartbeat(["u1", "u2"]);
    await client.presence.heartbeat("room", "u3");
    expect(await client.presence.room("room")).toEqual(await stats.presence("room").stats());
    expect((await client.presence.members("room")).members.map((m) => m.id).sort()).toEqual(["u1", "u2", "u3"]);

    await stats.leaderboard("b").configure({ maxIncrement: 10 });
    await client.leaderboards.join("b", "ada", { name: "Ada", score: 5 });
    await stats.leaderboard("b").join("bob", { name: "Bob", score: 9 });
    await client.leaderboards.score("b", "ada", { by: 7 });
    expect(await client.leaderboards.page("b")).toEqual(await stats.leaderboard("b").page());
    expect(await stats.leaderboard("b").get("ada")).toMatchObject({ score: 12, rank: 1 });

    // A board's guard refuses through both with the same code; the client's error carries the status.
    const viaClient = await client.leaderboards.score("b", "ada", { by: 11 }).catch((e: unknown) => e);
    const viaLibrary = await stats
      .leaderboard("b")
      .increment("ada", 11)
      .catch((e: unknown) => e);
    expect(viaClient).toBeInstanceOf(EdgestatsError);
    expect(viaLibrary).toBeInstanceOf(RejectedError);
    expect({ status: (viaClient as EdgestatsError).status, code: (viaClient as EdgestatsError).code }).toEqual({
      status: 422,
      code: (viaLibrary as RejectedError).code,
    });
    expect((await stats.leaderboard("b").get("ada")).score).toBe(12);
  });

  // Passing: the key schema is one. The same operations at the same times, through the Worker on
  // one prefix and through the library on another, leave the same keys, types, contents and
  // expiries (the idempotency records aside, see snapshotOf).
  it("the same writes through the client and through the library leave the same keys and contents", async () => {
    const viaHttp = track(createTestApi({ label: "r14-http", start }));
    const viaLib = track(createTestApi({ label: "r14-lib", start }));
    const client = clientOf(viaHttp);
    const stats = libraryOf(viaLib);
    for (const api of [viaHttp, viaLib]) api.setNow(start);

    await client.trending.record("s", [{ member: "a", count: 2 }, { member: "b" }]);
    await stats.trending("s").record([{ member: "a", count: 2 }, { member: "b" }]);
    await client.counters.incr("c", [
      { member: "a", by: 3, period: "hour" },
      { member: "b", by: -1 },
    ]);
    await stats.counter("c").incr([
      { member: "a", by: 3, period: "hour" },
      { member: "b", by: -1 },
    ]);
    await client.histograms.configure("h", { bucketWidth: 5, retentionDays: 30 });
    await stats.histogram("h").configure({ bucketWidth: 5, retentionDays: 30 });
    await client.histograms.observe("h", [1, 7, 12]);
    await stats.histogram("h").observe([1, 7, 12]);
    await client.presence.heartbeat("r", ["u1", "u2"]);
    await stats.presence("r").heartbeat(["u1", "u2"]);
    await client.leaderboards.configure("b", { reset: "weekly", ties: "reached" });
    await stats.leaderboard("b").configure({ reset: "weekly", ties: "reached" });
    await client.leaderboards.join("b", "ada", { name: "Ada", meta: { team: "x" } });
    await stats.leaderboard("b").join("ada", { name: "Ada", meta: { team: "x" } });
    for (const api of [viaHttp, viaLib]) api.advance(60_000);
    await client.leaderboards.score("b", "ada", { set: 40, mode: "best" });
    await stats.leaderboard("b").set("ada", 40, "best");
    await client.presence.leave("r", "u1");
    await stats.presence("r").leave("u1");

    const http = await snapshotOf(viaHttp);
    expect(http.length).toBeGreaterThan(10);
    expect(await snapshotOf(viaLib)).toEqual(http);
  });
});

describe("members that are awkward in a URL path", () => {
  // Passing: a member or id the library accepts ("/", "%", "?", "#", "+", "\\", spaces, dot runs
  // other than "." and "..") is one path segment through the client and the same member at the
  // Worker: read back, then removed, through {member} / {id}.
  it("round-trip through the client's path segments: read, then removed", async () => {
    const api = track(createTestApi({ label: "r14-paths", start }));
    const client = clientOf(api);
    const stats = libraryOf(api);
    const odd = ["a/b", "a%2Fb", "100%", "a?b", "a#b", "é x", "a\\b", "%", "a+b", " lead", "...", "a/..", "./a"];
    await stats.counter("c").incr(odd.map((member) => ({ member })));
    await stats.trending("s").record(odd.map((member) => ({ member })));
    await stats.presence("r").heartbeat(odd);
    for (const member of odd) {
      expect(await client.counters.member("c", member), member).toMatchObject({ member, score: 1 });
      expect(await client.trending.member("s", member), member).toMatchObject({ member, count: 1 });
      await client.counters.removeMember("c", member);
      await client.presence.leave("r", member);
    }
    expect((await stats.counter("c").top({ n: 50 })).items).toEqual([]);
    expect((await stats.presence("r").members()).members).toEqual([]);
  });
});

describe("what the contract offers on the wire, the client can ask for", () => {
  // Medium (a contract feature the typed client cannot reach). API.md v2: "Every GET that returns a
  // list accepts `Accept: text/csv`"; the client always sends `accept: application/json` and parses
  // JSON, and has no option to ask for CSV, so a user of edgestats/client exports by hand-rolled
  // fetch. Fix: list reads take a read option, e.g. `api.counters.top(c, query, { format: "csv" })`
  // (the same for every list GET of functions/csv.ts's CSV_LISTS), sending `Accept: text/csv` and
  // resolving to the CSV text (`string`, typed by an overload), paging headers (`Link`,
  // `X-Total-Count`) exposed beside it; errors stay the JSON envelope (EdgestatsError).
  it("counters.top(…, { format: 'csv' }) sends Accept: text/csv and returns the CSV text", async () => {
    const api = track(createTestApi({ label: "r14-csv", start }));
    await libraryOf(api)
      .counter("c")
      .incr([
        { member: "a", by: 2 },
        { member: "b,c", by: 1 },
      ]);
    const seen: Sent[] = [];
    const top = clientOf(api, TEST_KEYS.read, seen).counters.top as unknown as (
      counter: string,
      query: object,
      read: { format: "csv" },
    ) => Promise<unknown>;
    const csv = await top("c", { n: 5 }, { format: "csv" });
    expect(seen[0]?.headers.get("accept")).toMatch(/^text\/csv/);
    expect(typeof csv).toBe("string");
    expect((csv as string).split("\r\n").filter(Boolean)).toEqual(["rank,member,score", "1,a,2", '2,"b,c",1']);
  });

  // Medium (a contract feature the typed client cannot reach, and a mistyped answer when reached).
  // API.md v2 queued ingest: `Prefer: respond-async` on trending events, counter increments and
  // heartbeats → 202 `{queued, requestId}`. The client has no option to send it (WriteOptions holds
  // only idempotencyKey), and its result types say `{accepted}` / `{results}` / `{online}` only, so
  // a caller who adds the header through a custom `fetch` gets a 202 body typed as something it is
  // not. Fix: WriteOptions `respondAsync?: true` on those three methods (an overload whose result is
  // `{ queued: number; requestId: string }`, or the union when the deployment may have no queue:
  // without a binding the service answers 200 synchronously), sending `Prefer: respond-async`.
  describe("Prefer: respond-async", () => {
    const stream = `r14-async-${Math.random().toString(36).slice(2, 8)}`;
    // the queue consumer applies messages under the deployment's KEY_PREFIX ("es", wrangler.toml)
    const deployment = createTestApi({ label: "r14-async-es", start: Date.now(), vars: { KEY_PREFIX: "es" } });
    afterAll(async () => {
      await new Promise((r) => setTimeout(r, 1500));
      await deployment.del(`/v1/trending/${stream}`, { key: "admin" });
    });

    it("trending.record(…, { respondAsync: true }) sends the header and resolves to { queued, requestId }", async () => {
      const api = track(createTestApi({ label: "r14-async", start: Date.now() }));
      const seen: Sent[] = [];
      const record = clientOf(api, TEST_KEYS.ingest, seen).trending.record as unknown as (
        stream: string,
        events: { member: string }[],
        write: { respondAsync: true },
      ) => Promise<unknown>;
      const answer = await record(stream, [{ member: "a" }, { member: "b" }], { respondAsync: true });
      expect(seen[0]?.headers.get("prefer")).toBe("respond-async");
      expect(answer).toEqual({ queued: 2, requestId: expect.any(String) });
    });
  });
});
