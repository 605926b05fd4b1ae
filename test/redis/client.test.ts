/**
 * `edgestats/client` against the real Worker under `wrangler dev` (bundled
 * once, served with --no-bundle) on the local Upstash server: every operation
 * once, the list of operations equal to /openapi.json's, typed errors, the
 * Idempotency-Key reused on retry, retries only where safe.
 */
import { describe, expect, it } from "vitest";
import { createClient, EdgestatsError, OPERATIONS, type ClientOptions, type Operation } from "../../src/client.ts";
import { EdgestatsError as LibraryError } from "../../src/errors.ts";
import { Edgestats } from "../../src/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { bundledDev, workerVars } from "../helpers/wrangler-dev.ts";

const { target, prefix, redis } = libraryTest("client");
const KEYS = { ingest: "client-ingest-key-01", read: "client-read-key-0001", admin: "client-admin-key-001" };
const worker = bundledDev(workerVars(target, KEYS, prefix, { TRENDING_CACHE_SECONDS: "0" }));

/** Operations the tests exercised, from the requests the client sent. */
const exercised = new Set<Operation>();
const templates = Object.entries(OPERATIONS).map(([name, [method, path]]) => ({
  name: name as Operation,
  method,
  pattern: new RegExp(`^${path.replace(/\{\w+\}/g, "[^/]+")}$`),
}));
const recording: NonNullable<ClientOptions["fetch"]> = (request) => {
  const { pathname } = new URL(request.url);
  const op = templates.find((t) => t.method === request.method && t.pattern.test(pathname));
  if (op) exercised.add(op.name);
  return fetch(request);
};
const client = (key: string, extra: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: worker.url, key, fetch: recording, backoffMs: () => 1, ...extra });

describe("edgestats/client against wrangler dev", () => {
  it("its operations are exactly /openapi.json's (dashboard assets and the document itself aside)", async () => {
    const doc = (await (await fetch(`${worker.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const served = Object.entries(doc.paths)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      .filter((op) => !/^GET \/(dashboard\.(js|css)|dashboard\/\{module\}|openapi\.json|docs)?$/.test(op));
    const mine = Object.values(OPERATIONS).map(([method, path]) => `${method} ${path}`);
    expect(mine.sort()).toEqual(served.sort());
  });

  it("trending, counters and histograms: writes and reads, typed results", async () => {
    const api = client(KEYS.admin);
    expect(await api.health()).toMatchObject({ ok: true, redis: { ok: true } });
    expect(await api.trending.record("searches", [{ member: "redis", count: 3 }, { member: "workers" }])).toEqual({
      accepted: 2,
    });
    expect(await api.trending.record("searches", { member: "redis" })).toEqual({ accepted: 1 });
    const top = await api.trending.top("searches", { n: 5, window: "24h" });
    expect(top.items).toEqual([
      { rank: 1, member: "redis", count: 4 },
      { rank: 2, member: "workers", count: 1 },
    ]);
    expect(top.exact).toBe(true);
    expect(await api.trending.member("searches", "redis")).toMatchObject({ member: "redis", count: 4, rank: 1 });
    expect((await api.trending.list()).streams).toContain("searches");
    // nothing before this hour: every member of it is new (baseline 0, ratio null)
    expect((await api.trending.rising("searches", { n: 1, baseline: "24h" })).items).toMatchObject([
      { member: "redis", count: 4, baseline: 0, ratio: null },
    ]);
    const history = await api.trending.history("searches", "redis", { hours: 2 });
    expect({ points: history.points.length, total: history.points.reduce((sum, p) => sum + p.count, 0) }).toEqual({
      points: 3,
      total: 4,
    });

    expect(await api.counters.incr("hits", [{ member: "/a", by: 3 }, { member: "/b" }])).toEqual({
      results: [
        { member: "/a", score: 3 },
        { member: "/b", score: 1 },
      ],
    });
    expect(await api.counters.incr("hits", { member: "/b", by: -2 })).toEqual({
      results: [{ member: "/b", score: -1 }],
    });
    expect((await api.counters.top("hits", { n: 1 })).items).toEqual([{ rank: 1, member: "/a", score: 3 }]);
    expect((await api.counters.bottom("hits", { n: 1 })).items).toEqual([{ rank: 1, member: "/b", score: -1 }]);
    expect(await api.counters.member("hits", "/a")).toEqual({ member: "/a", score: 3, rank: 1, rankFromBottom: 2 });
    expect(await api.counters.range("hits", { min: "0", max: "+inf" })).toEqual({
      items: [{ member: "/a", score: 3 }],
      count: 1,
    });
    expect((await api.counters.sorted("hits", { by: "score", order: "desc" })).items.map((i) => i.member)).toEqual([
      "/a",
      "/b",
    ]);
    await api.counters.union("hits-copy", { sources: ["hits"] });
    expect((await api.counters.top("hits-copy")).items).toHaveLength(2);
    expect(await api.counters.removeMember("hits", "/b")).toBeUndefined();
    expect((await api.counters.list()).counters).toEqual(expect.arrayContaining(["hits", "hits-copy"]));
    await api.counters.delete("hits-copy");

    expect(await api.histograms.configure("boot", { bucketWidth: 10, unit: "ms" })).toMatchObject({
      histogram: "boot",
      bucketWidth: 10,
      created: true,
    });
    expect(await api.histograms.observe("boot", [12, { value: 48 }])).toEqual({ accepted: 2 });
    expect(await api.histograms.observe("boot", 31)).toEqual({ accepted: 1 });
    expect(await api.histograms.read("boot")).toMatchObject({ count: 3, min: 12, max: 48, unit: "ms" });
    expect((await api.histograms.list()).histograms).toContain("boot");
    await api.histograms.delete("boot");
    await api.trending.delete("searches");
    await api.counters.delete("hits");
    expect(await api.jobs.run("sweep-counters")).toMatchObject({ job: "sweep-counters" });
  });

  it("presence and leaderboards", async () => {
    const api = client(KEYS.admin);
    expect(await api.presence.heartbeat("lobby", ["ada", "bob"])).toMatchObject({ online: 2 });
    expect(await api.presence.heartbeat("lobby", "cy")).toMatchObject({ online: 3 });
    await api.presence.leave("lobby", "bob");
    expect(await api.presence.room("lobby")).toMatchObject({ room: "lobby", online: 2, activeToday: 3 });
    expect((await api.presence.members("lobby", { limit: 10 })).members.map((m) => m.id).sort()).toEqual(["ada", "cy"]);
    expect(await api.jobs.run("trim")).toMatchObject({ job: "trim" });
    expect((await api.presence.history("lobby", { hours: 1 })).points.length).toBeGreaterThan(0);
    expect((await api.presence.list()).rooms).toContain("lobby");
    const today = new Date().toISOString().slice(0, 10);
    expect(await api.presence.day("lobby", today)).toMatchObject({ room: "lobby", day: today, active: 3, new: 3 });
    expect(await api.presence.total()).toMatchObject({ activeTodayError: 0.0081 });
    await api.presence.delete("lobby");

    expect(await api.leaderboards.configure("weekly", { ties: "reached" })).toMatchObject({
      board: "weekly",
      ties: "reached",
    });
    expect(await api.leaderboards.join("weekly", "ada", { name: "Ada", meta: { country: "UK" } })).toMatchObject({
      player: "ada",
      created: true,
    });
    await api.leaderboards.join("weekly", "bob", { name: "Bob" });
    expect(await api.leaderboards.score("weekly", "ada", { by: 10 })).toEqual({ score: 10, rank: 1 });
    expect(
      await api.leaderboards.scores("weekly", [
        { player: "bob", set: 20 },
        { player: "ada", by: 1 },
      ]),
    ).toEqual({
      results: [
        { player: "bob", score: 20, rank: 1 },
        { player: "ada", score: 11, rank: 2 },
      ],
    });
    expect(await api.leaderboards.player("weekly", "ada")).toMatchObject({
      name: "Ada",
      meta: { country: "UK" },
      score: 11,
      rank: 2,
    });
    expect((await api.leaderboards.page("weekly", { limit: 10 })).items.map((r) => r.player)).toEqual(["bob", "ada"]);
    expect((await api.leaderboards.around("weekly", "ada", { k: 1 })).items).toHaveLength(2);
    expect(await api.leaderboards.count("weekly")).toMatchObject({ board: "weekly", players: 2 });
    expect(await client(KEYS.read).leaderboards.rank("weekly", ["ada", "bob", "zed"])).toMatchObject({
      items: [
        { player: "bob", rank: 1, subsetRank: 1 },
        { player: "ada", rank: 2, subsetRank: 2 },
      ],
      unknown: ["zed"],
    });
    expect(await api.leaderboards.seasons("weekly")).toMatchObject({ board: "weekly", reset: "none", seasons: [] });
    expect((await api.leaderboards.list()).boards).toContain("weekly");
    await api.leaderboards.removePlayer("weekly", "bob");
    await api.leaderboards.delete("weekly");
    expect(await api.jobs.run("compact")).toMatchObject({ job: "compact" });
  });

  it("errors are EdgestatsError with status, code and details; 4xx are never retried", async () => {
    let sent = 0;
    const counting: ClientOptions["fetch"] = (request) => ((sent += 1), fetch(request));
    const catchOf = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => e as EdgestatsError,
      );

    // a bad body: the service's 400, sent once
    const invalid = await catchOf(client(KEYS.ingest, { fetch: counting }).counters.incr("hits", { member: "" }));
    expect(invalid).toBeInstanceOf(EdgestatsError);
    expect(invalid).toBeInstanceOf(LibraryError);
    expect(invalid).toMatchObject({ status: 400, code: "invalid_request" });
    expect(invalid?.details?.[0]).toMatchObject({ in: "json", path: "member" });
    expect(sent).toBe(1);
    // a bad name in the path: the route's refusal, made by the client before sending (review 25)
    const badName = await catchOf(client(KEYS.ingest, { fetch: counting }).counters.incr("bad name", { member: "x" }));
    expect(badName).toMatchObject({ status: 400, code: "invalid_request" });
    expect(badName?.details?.[0]).toMatchObject({ in: "param", path: "counter" });
    expect(sent).toBe(1);

    expect(await catchOf(client(KEYS.read).leaderboards.player("nope", "nobody"))).toMatchObject({
      status: 404,
      code: "not_found",
    });
    expect(await catchOf(client("not-a-key-of-this-service").trending.list())).toMatchObject({
      status: 401,
      code: "unauthorized",
    });
    expect(await catchOf(client(KEYS.ingest).counters.delete("hits"))).toMatchObject({
      status: 403,
      code: "forbidden",
    });
    expect(await catchOf(client(KEYS.read).counters.incr("hits", { member: "x" }))).toMatchObject({
      status: 403,
      code: "forbidden",
    });
  });

  it("a write whose response was lost is retried with the same Idempotency-Key and counts once", async () => {
    const keys: string[] = [];
    let lose = true;
    const lossy: ClientOptions["fetch"] = async (request) => {
      keys.push(request.headers.get("idempotency-key") ?? "");
      const response = await fetch(request);
      if (lose) {
        lose = false;
        throw new TypeError("fetch failed: connection reset");
      }
      return response;
    };
    const api = client(KEYS.ingest, { fetch: lossy });
    expect(await api.counters.incr("idem", { member: "m", by: 5 })).toEqual({ results: [{ member: "m", score: 5 }] });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect((await client(KEYS.read).counters.member("idem", "m")).score).toBe(5);
    // the next write is another request: a new key
    await api.counters.incr("idem", { member: "m", by: 5 });
    expect(keys[2]).not.toBe(keys[0]);
    expect((await client(KEYS.read).counters.member("idem", "m")).score).toBe(10);
    // a caller's own key is sent as it is
    await api.counters.incr("idem", { member: "m", by: 1 }, { idempotencyKey: "order-42" });
    expect(keys[3]).toBe("order-42");
  });

  it("503 and network errors are retried with backoff (GET and keyed writes), DELETE is not; the last error is thrown", async () => {
    let calls = 0;
    const delays: number[] = [];
    const unavailable =
      (times: number): ClientOptions["fetch"] =>
      async (request) => {
        calls += 1;
        if (calls <= times) {
          return Response.json(
            { error: { code: "storage_unavailable", message: "down" } },
            { status: 503, headers: { "retry-after": "0" } },
          );
        }
        return fetch(request);
      };
    const flaky = client(KEYS.admin, { fetch: unavailable(2), backoffMs: (attempt) => (delays.push(attempt), 1) });
    expect((await flaky.counters.list()).counters).toBeInstanceOf(Array);
    expect(calls).toBe(3);
    expect(delays).toEqual([1, 2]);

    calls = 0;
    const down = client(KEYS.admin, { fetch: unavailable(100), retries: 2 });
    await expect(down.trending.record("s", { member: "x" })).rejects.toMatchObject({
      status: 503,
      code: "storage_unavailable",
    });
    expect(calls).toBe(3);

    calls = 0;
    const dropped = client(KEYS.admin, {
      fetch: async () => ((calls += 1), Promise.reject(new TypeError("fetch failed"))),
    });
    await expect(dropped.counters.delete("x")).rejects.toMatchObject({ status: 0, code: "network_error" });
    expect(calls).toBe(1);
    await expect(dropped.counters.list()).rejects.toMatchObject({ status: 0, code: "network_error" });
    expect(calls).toBe(1 + 4);
  });

  it("the library and the service share data: what Edgestats writes under the service's prefix, the client reads", async () => {
    const stats = new Edgestats({ redis, prefix });
    await stats.leaderboard("shared").join("lib-player", { name: "From the library" });
    await stats.leaderboard("shared").increment("lib-player", 7);
    await stats.trending("shared").record([{ member: "x", count: 2 }]);
    const api = client(KEYS.read);
    expect(await api.leaderboards.player("shared", "lib-player")).toMatchObject({
      name: "From the library",
      score: 7,
      rank: 1,
    });
    expect((await api.trending.top("shared")).items).toEqual([{ rank: 1, member: "x", count: 2 }]);
  });

  it("queued ingest: status (admin) and lag (read)", async () => {
    expect(await client(KEYS.admin).ingest.status()).toMatchObject({
      applied: expect.any(Number),
      deadLettered: expect.any(Number),
      queue: expect.any(Boolean),
    });
    expect(await client(KEYS.read).ingest.lag()).toMatchObject({
      oldestAgeMs: expect.any(Number),
      queue: expect.any(Boolean),
    });
  });

  it("webhooks (admin): put, list without secrets, test, deliveries, delete", async () => {
    const api = client(KEYS.admin);
    const settings = {
      url: "https://example.invalid/hook",
      events: ["leaderboard.leader" as const],
      secret: "client-webhook-secret-01",
    };
    expect(await api.webhooks.put("ops", settings)).toMatchObject({
      created: true,
      webhook: { name: "ops", url: settings.url, n: 10 },
    });
    const { webhooks } = await api.webhooks.list();
    expect(webhooks.map((w) => w.name)).toEqual(["ops"]);
    expect(JSON.stringify(webhooks)).not.toContain(settings.secret);
    expect((await api.webhooks.test("ops")).id).toMatch(/^evt_test_/);
    expect(Array.isArray((await api.webhooks.deliveries("ops", { limit: 5 })).deliveries)).toBe(true);
    expect(await api.webhooks.delete("ops")).toEqual({ deleted: true });
    await expect(client(KEYS.read).webhooks.list()).rejects.toMatchObject({ status: 403, code: "forbidden" });
  });

  it("every operation was exercised above", () => {
    expect([...exercised].sort()).toEqual(Object.keys(OPERATIONS).sort());
  });
});
