/**
 * Review 6 ("is what we tell users true?"): concrete user-facing claims of README.md and
 * docs/*.md checked against the real Worker in workerd (real Redis behind the local Upstash
 * server). Each test cites the doc and line or heading it checks. A claim that does not hold is
 * an `it.fails` whose body asserts what the doc says, with a comment on who is wrong.
 */
import { describe, expect, it } from "vitest";
import { TEST_INGEST_KEY_2 } from "../helpers/keys.ts";
import { createTestApi, type TestApi, cleanedUpAfterAll } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string) => track(createTestApi({ label }));
const MIN = 60_000;
const DAY = 86_400_000;

/** The README's error envelope: `{"error":{"code","message","details"?}}`. */
function expectEnvelope(body: any, code?: string) {
  expect(typeof body.error.code).toBe("string");
  expect(typeof body.error.message).toBe("string");
  if (code) expect(body.error.code).toBe(code);
}

describe("README ## API in brief: envelope, headers, statuses", () => {
  it("a 400 carries {error:{code,message,details}} with each bad field in details (README ## API in brief)", async () => {
    const api = newApi("r6-env");
    const res = await api.post("/v1/counters/c/incr", { member: "a", by: "x" });
    expect(res.status).toBe(400);
    expectEnvelope(res.body);
    expect(Array.isArray(res.body.error.details) || typeof res.body.error.details === "object").toBe(true);
    expect(JSON.stringify(res.body.error.details)).toContain("by");
  });

  it("every response carries X-Request-Id, also a 401 and /healthz (README ## API in brief)", async () => {
    const api = newApi("r6-reqid");
    for (const r of [
      await api.get("/healthz", { key: "none" }),
      await api.get("/v1/counters", { key: "none" }),
      await api.get("/v1/counters"),
    ]) {
      expect(r.headers.get("x-request-id")).toBeTruthy();
    }
  });

  it("missing key 401, wrong scope 403, both in the envelope (README ## Guarantees, Access)", async () => {
    const api = newApi("r6-auth");
    const a = await api.post("/v1/counters/c/incr", { member: "a" }, { key: "none" });
    expect(a.status).toBe(401);
    expectEnvelope(a.body);
    const b = await api.post("/v1/counters/c/incr", { member: "a" }, { key: "read" });
    expect(b.status).toBe(403);
    expectEnvelope(b.body);
    expect(await api.keys()).toEqual([]);
  });

  it("/v1 answers carry nosniff and Cache-Control: private, no-store (README ## Decisions worth knowing)", async () => {
    const api = newApi("r6-nosniff");
    const res = await api.get("/v1/counters");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cache-control")).toBe("private, no-store");
  });

  it("a method a path does not take is 405 method_not_allowed with Allow (README ## Decisions worth knowing)", async () => {
    const api = newApi("r6-405");
    const res = await api.call("PATCH", "/v1/counters/c/incr", { member: "a" }, { key: "admin" });
    expect(res.status).toBe(405);
    expectEnvelope(res.body, "method_not_allowed");
    expect(res.headers.get("allow")).toMatch(/POST/);
  });

  it("a GET without a list answers 406 to Accept: text/csv (README ## API in brief)", async () => {
    const api = newApi("r6-406");
    const res = await api.get("/v1/presence/_total", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(406);
  });

  it("CSV text cells starting with = + - @ get a leading ' (README ## API in brief)", async () => {
    const api = newApi("r6-csv");
    expect((await api.post("/v1/counters/c/incr", { items: [{ member: "=1+2" }, { member: "@x" }] })).status).toBe(200);
    const res = await api.get("/v1/counters/c/top?n=10", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/csv/);
    expect(String(res.body)).toContain("'=1+2");
    expect(String(res.body)).toContain("'@x");
  });

  it("GET /healthz answers without a key (README ## API in brief)", async () => {
    const api = newApi("r6-health");
    const res = await api.get("/healthz", { key: "none" });
    expect(res.status).toBe(200);
  });

  it("the API reference is served at /docs and /openapi.json (README ## Quick start)", async () => {
    const api = newApi("r6-openapi");
    const spec = await api.get("/openapi.json", { key: "none" });
    expect(spec.status).toBe(200);
    expect(typeof spec.body.openapi).toBe("string");
    const docs = await api.get("/docs", { key: "none" });
    expect(docs.status).toBe(200);
  });
});

describe("README ## API in brief: Idempotency-Key", () => {
  it("a repeat returns the first response with Idempotent-Replayed: true and writes nothing again", async () => {
    const api = newApi("r6-idem");
    const h = { "idempotency-key": "k-1" };
    const first = await api.post("/v1/counters/c/incr", { member: "a", by: 2 }, { headers: h });
    const again = await api.post("/v1/counters/c/incr", { member: "a", by: 2 }, { headers: h });
    expect(again.status).toBe(first.status);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get("/v1/counters/c/members/a")).body.score).toBe(2);
  });

  it("the same key with another body is a 409 (README ## Guarantees, Idempotency)", async () => {
    const api = newApi("r6-idem409");
    const h = { "idempotency-key": "k-2" };
    await api.post("/v1/counters/c/incr", { member: "a", by: 2 }, { headers: h });
    const res = await api.post("/v1/counters/c/incr", { member: "a", by: 3 }, { headers: h });
    expect(res.status).toBe(409);
    expectEnvelope(res.body, "idempotency_key_reused"); // docs/guarantees.md:20
  });

  it("records belong to the API key: another ingest key's same Idempotency-Key writes again", async () => {
    const api = newApi("r6-idemkey");
    const h = { "idempotency-key": "shared" };
    await api.post("/v1/counters/c/incr", { member: "a" }, { headers: h });
    const other = await api.post("/v1/counters/c/incr", { member: "a" }, { headers: h, key: TEST_INGEST_KEY_2 });
    expect(other.status).toBe(200);
    expect(other.headers.get("idempotent-replayed")).toBeNull();
    expect((await api.get("/v1/counters/c/members/a")).body.score).toBe(2);
  });

  it("the record is kept 24 h: a repeat just under 24 h (by the clock of the request) replays", async () => {
    const api = newApi("r6-idem24");
    // Only "just under" is checkable here: the record's expiry is a Redis TTL on the real clock,
    // which the fake request clock does not move (idempotency.test.ts checks the TTL itself).
    const h = { "idempotency-key": "k-24" };
    await api.post("/v1/counters/c/incr", { member: "a" }, { headers: h });
    api.advance(DAY - MIN);
    const r1 = await api.post("/v1/counters/c/incr", { member: "a" }, { headers: h });
    expect(r1.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get("/v1/counters/c/members/a")).body.score).toBe(1);
  });

  it("a refused request leaves no record: the same key then succeeds (README ## Guarantees)", async () => {
    const api = newApi("r6-idemrefused");
    const h = { "idempotency-key": "k-bad" };
    expect((await api.post("/v1/counters/c/incr", { member: "a", by: "x" }, { headers: h })).status).toBe(400);
    const ok = await api.post("/v1/counters/c/incr", { member: "a", by: 1 }, { headers: h });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("idempotent-replayed")).toBeNull();
  });
});

describe("README ### Trending and docs/trending.md", () => {
  it("1,000 events are accepted and 1,001 are a 400 writing nothing (README: one event or up to 1,000)", async () => {
    const api = newApi("r6-tr-batch");
    const ev = (n: number) => Array.from({ length: n }, (_, i) => ({ member: `m${i}` }));
    expect((await api.post("/v1/trending/s/events", { events: ev(1001) })).status).toBe(400);
    expect(await api.keys()).toEqual([]);
    expect((await api.post("/v1/trending/s/events", { events: ev(1000) })).status).toBeLessThan(300);
  });

  it("count 0 < count ≤ 1e12: 0 and 1e12+1 are 400, 1e12 is accepted", async () => {
    const api = newApi("r6-tr-count");
    expect((await api.post("/v1/trending/s/events", { events: [{ member: "a", count: 0 }] })).status).toBe(400);
    expect((await api.post("/v1/trending/s/events", { events: [{ member: "a", count: 1e12 + 1 }] })).status).toBe(400);
    expect((await api.post("/v1/trending/s/events", { events: [{ member: "a", count: 1e12 }] })).status).toBeLessThan(
      300,
    );
  });

  it("`at` at most 5 minutes ahead: +5 min accepted, +5 min 1 s refused", async () => {
    const api = newApi("r6-tr-at");
    const ok = await api.post("/v1/trending/s/events", { events: [{ member: "a", at: api.now + 5 * MIN }] });
    expect(ok.status).toBeLessThan(300);
    const bad = await api.post("/v1/trending/s/events", { events: [{ member: "a", at: api.now + 5 * MIN + 1000 }] });
    expect(bad.status).toBe(400);
    expectEnvelope(bad.body);
  });

  it("`n` 1..100: 0 and 101 are 400, 100 answers", async () => {
    const api = newApi("r6-tr-n");
    expect((await api.get("/v1/trending/s/top?n=0")).status).toBe(400);
    expect((await api.get("/v1/trending/s/top?n=101")).status).toBe(400);
    expect((await api.get("/v1/trending/s/top?n=100")).status).toBe(200);
  });

  it("`window` ≤ min(retention, 168) h: 50h answers, 51h is a 400 with the default 50 h retention", async () => {
    const api = newApi("r6-tr-win");
    expect((await api.get("/v1/trending/s/top?window=50h")).status).toBe(200);
    expect((await api.get("/v1/trending/s/top?window=51h")).status).toBe(400);
  });

  it("without `window`, 24 h: window.from is the start of the hour 24 h back, window.to the end of the current one", async () => {
    const api = newApi("r6-tr-default");
    const res = await api.get("/v1/trending/s/top");
    expect(res.status).toBe(200);
    const hour = Math.floor(api.now / 3_600_000) * 3_600_000;
    expect(res.body.window.hours).toBe(24);
    // epoch ms (docs/trending.md:12-13)
    expect(res.body.window.to).toBe(hour + 3_600_000);
    expect(res.body.window.from).toBe(hour - 24 * 3_600_000);
  });

  it("exact is true exactly when maxError is 0 (README: `exact` and `maxError`)", async () => {
    const api = newApi("r6-tr-exact");
    await api.post("/v1/trending/s/events", { events: [{ member: "a", count: 3 }, { member: "b" }] });
    const res = await api.get("/v1/trending/s/top?n=10");
    expect(res.body.maxError).toBe(0);
    expect(res.body.exact).toBe(true);
  });

  it("Cache-Control: no-cache skips the edge cache and says X-Edgestats-Cache: bypass (README: Edge cache)", async () => {
    // The worker test project runs with the cache off (TRENDING_CACHE_SECONDS=0): turn it on.
    const api = track(createTestApi({ label: "r6-tr-cache", vars: { TRENDING_CACHE_SECONDS: "5" } }));
    const res = await api.get("/v1/trending/s/top?n=10", { headers: { "cache-control": "no-cache" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-edgestats-cache")).toBe("bypass");
  });

  it("rising: a new member has ratio null and 0 → 3 scores 3 (README: Rising and history)", async () => {
    const api = newApi("r6-tr-rising");
    await api.post("/v1/trending/s/events", { events: [{ member: "new", count: 3 }] });
    const res = await api.get("/v1/trending/s/rising?n=10&baseline=24h");
    expect(res.status).toBe(200);
    const item = res.body.items.find((i: any) => i.member === "new");
    expect(item.ratio).toBeNull();
    expect(item.score).toBeCloseTo(3, 5);
  });
});

describe("README ### Counters and docs/counters.md", () => {
  it("`by` may be negative (README ### Counters)", async () => {
    const api = newApi("r6-c-neg");
    await api.post("/v1/counters/c/incr", { member: "a", by: 5 });
    await api.post("/v1/counters/c/incr", { member: "a", by: -7 });
    expect((await api.get("/v1/counters/c/members/a")).body.score).toBe(-2);
  });

  it("an incr batch of 1,001 items is a 400 that writes nothing (README: a batch of up to 1,000)", async () => {
    const api = newApi("r6-c-batch");
    const items = Array.from({ length: 1001 }, (_, i) => ({ member: `m${i}` }));
    expect((await api.post("/v1/counters/c/incr", { items })).status).toBe(400);
    expect(await api.keys()).toEqual([]);
  });

  it("rank and rankFromBottom are 1-based (README ### Counters, Reads)", async () => {
    const api = newApi("r6-c-rank");
    await api.post("/v1/counters/c/incr", {
      items: [
        { member: "a", by: 3 },
        { member: "b", by: 2 },
        { member: "c", by: 1 },
      ],
    });
    const res = await api.get("/v1/counters/c/members/a");
    expect(res.body.rank).toBe(1);
    expect(res.body.rankFromBottom).toBe(3);
  });

  it("`at` within 400 days back: 401 days back is a 400 (README ### Counters)", async () => {
    const api = newApi("r6-c-at");
    const bad = await api.post("/v1/counters/c/incr", { member: "a", at: api.now - 401 * DAY, period: "day" });
    expect(bad.status).toBe(400);
    expect(await api.keys()).toEqual([]);
  });

  it("`at` more than 5 minutes ahead is a 400 (README ### Counters)", async () => {
    const api = newApi("r6-c-ahead");
    const bad = await api.post("/v1/counters/c/incr", { member: "a", at: api.now + 6 * MIN, period: "day" });
    expect(bad.status).toBe(400);
  });

  it("ranges over 400 days are a 400 (README ### Counters, period)", async () => {
    const api = newApi("r6-c-range");
    await api.post("/v1/counters/c/incr", { member: "a", period: "day" });
    const to = new Date(api.now).toISOString().slice(0, 10);
    // "at most 400 days from `from` to `to`" (docs/counters.md:96): 401 days apart is over.
    const from = new Date(api.now - 401 * DAY).toISOString().slice(0, 10);
    const res = await api.get(`/v1/counters/c/top?period=day&from=${from}&to=${to}`);
    expect(res.status).toBe(400);
    expectEnvelope(res.body);
  });

  it("GET /v1/counters lists most recently written first (README ### Counters, union bullet)", async () => {
    const api = newApi("r6-c-list");
    await api.post("/v1/counters/old/incr", { member: "a" });
    api.advance(2 * MIN);
    await api.post("/v1/counters/new/incr", { member: "a" });
    const res = await api.get("/v1/counters");
    const names = (res.body.counters ?? res.body.items).map((c: any) => c.name ?? c.counter ?? c);
    expect(names.slice(0, 2)).toEqual(["new", "old"]);
  });
});

describe("README ### Histograms and docs/histograms.md", () => {
  it("observing into a histogram never PUT is a 404 whose message says to PUT it (docs/histograms.md:30)", async () => {
    const api = newApi("r6-h-404");
    const res = await api.post("/v1/histograms/h/observations", { value: 1 });
    expect(res.status).toBe(404);
    expectEnvelope(res.body);
    expect(res.body.error.message).toMatch(/PUT/);
  });

  it("retentionDays default and maximum 400: default answers 400, 401 is a 400 (README ### Histograms)", async () => {
    const api = newApi("r6-h-ret");
    const res = await api.put("/v1/histograms/h", { bucketWidth: 10 }, { key: "admin" });
    expect(res.status).toBe(201);
    expect(res.body.retentionDays).toBe(400);
    expect((await api.put("/v1/histograms/h2", { bucketWidth: 10, retentionDays: 401 }, { key: "admin" })).status).toBe(
      400,
    );
  });

  it("PUT answers 201 created then 200 replaced (docs/histograms.md:13)", async () => {
    const api = newApi("r6-h-put");
    expect((await api.put("/v1/histograms/h", { bucketWidth: 10 }, { key: "admin" })).status).toBe(201);
    const again = await api.put("/v1/histograms/h", { bucketWidth: 10 }, { key: "admin" });
    expect(again.status).toBe(200);
    expect(again.body.created).toBe(false);
  });

  it("changing bucketWidth while data is stored is a 409 bucket_width_conflict (docs/histograms.md:34)", async () => {
    const api = newApi("r6-h-409");
    await api.put("/v1/histograms/h", { bucketWidth: 10 }, { key: "admin" });
    expect((await api.post("/v1/histograms/h/observations", { value: 5 })).status).toBe(200);
    const res = await api.put("/v1/histograms/h", { bucketWidth: 20 }, { key: "admin" });
    expect(res.status).toBe(409);
    expectEnvelope(res.body, "bucket_width_conflict");
  });

  it("observations answer {accepted: n} and 1,001 values are a 400 (docs/histograms.md:14)", async () => {
    const api = newApi("r6-h-batch");
    await api.put("/v1/histograms/h", { bucketWidth: 10 }, { key: "admin" });
    const ok = await api.post("/v1/histograms/h/observations", { values: [1, 2, { value: 3 }] });
    expect(ok.body).toEqual({ accepted: 3 });
    const bad = await api.post("/v1/histograms/h/observations", { values: Array.from({ length: 1001 }, () => 1) });
    expect(bad.status).toBe(400);
  });
});

describe("README ### Presence and docs/presence.md", () => {
  it("heartbeats answer {online, new} (README ### Presence)", async () => {
    const api = newApi("r6-p-hb");
    const res = await api.post("/v1/presence/r/heartbeats", { ids: ["a", "b"] });
    expect(res.status).toBe(200);
    expect(res.body.online).toBe(2);
    expect(res.body.new).toBe(2);
  });

  it("1,001 ids are a 400 that writes nothing (README: 1 or up to 1,000 ids)", async () => {
    const api = newApi("r6-p-batch");
    const ids = Array.from({ length: 1001 }, (_, i) => `u${i}`);
    expect((await api.post("/v1/presence/r/heartbeats", { ids })).status).toBe(400);
    expect(await api.keys()).toEqual([]);
  });

  it("DELETE a member is a 204 also when it was not online (docs/presence.md:12)", async () => {
    const api = newApi("r6-p-del");
    expect((await api.del("/v1/presence/r/members/ghost")).status).toBe(204);
  });

  it("_total answers activeTodayError 0.0081 and ?day= is a 400 (docs/presence.md:15)", async () => {
    const api = newApi("r6-p-total");
    await api.post("/v1/presence/r/heartbeats", { ids: ["a"] });
    const res = await api.get("/v1/presence/_total");
    expect(res.status).toBe(200);
    expect(res.body.activeTodayError).toBe(0.0081);
    const day = new Date(api.now).toISOString().slice(0, 10);
    expect((await api.get(`/v1/presence/_total?day=${day}`)).status).toBe(400);
  });

  it("?day= accepts 400 days back and refuses 401 (docs/presence.md:14)", async () => {
    const api = newApi("r6-p-day");
    const d = (n: number) => new Date(api.now - n * DAY).toISOString().slice(0, 10);
    const ok = await api.get(`/v1/presence/r?day=${d(400)}`);
    expect(ok.status).toBe(200);
    expect(ok.body.peak).toBe(0);
    expect((await api.get(`/v1/presence/r?day=${d(401)}`)).status).toBe(400);
  });
});

describe("README ### Leaderboards and docs/leaderboards.md", () => {
  const join = (api: TestApi, p: string, score?: number) =>
    api.put(`/v1/leaderboards/b/players/${p}`, { name: p, ...(score !== undefined ? { score } : {}) });

  it("join is 201 new and 200 existing, and never resets a score (README ### Leaderboards)", async () => {
    const api = newApi("r6-lb-join");
    expect((await join(api, "p", 5)).status).toBe(201);
    const again = await join(api, "p", 0);
    expect(again.status).toBe(200);
    expect(again.body.score).toBe(5);
  });

  it("page limit ≤ 100 and around k ≤ 50 (README ### Leaderboards; docs/leaderboards.md:23, :48)", async () => {
    const api = newApi("r6-lb-limits");
    await join(api, "p", 1);
    expect((await api.get("/v1/leaderboards/b?limit=100")).status).toBe(200);
    expect((await api.get("/v1/leaderboards/b?limit=101")).status).toBe(400);
    expect((await api.get("/v1/leaderboards/b/players/p/around?k=50")).status).toBe(200);
    expect((await api.get("/v1/leaderboards/b/players/p/around?k=51")).status).toBe(400);
  });

  it("keepSeasons defaults to 12 (README ### Leaderboards, Seasons)", async () => {
    const api = newApi("r6-lb-keep");
    const res = await api.put("/v1/leaderboards/b", { reset: "daily" }, { key: "admin" });
    expect(res.status).toBeLessThan(300);
    expect(res.body.keepSeasons).toBe(12);
  });

  it("a write outside the guards is a 422 score_rejected and writes nothing (README ### Leaderboards, Guards)", async () => {
    const api = newApi("r6-lb-guard");
    await api.put("/v1/leaderboards/b", { maxScore: 10 }, { key: "admin" });
    await join(api, "p", 1);
    const res = await api.post("/v1/leaderboards/b/players/p/score", { by: 100 });
    expect(res.status).toBe(422);
    expectEnvelope(res.body, "score_rejected");
    expect((await api.get("/v1/leaderboards/b/players/p")).body.score).toBe(1);
  });

  it("score for a player who never joined is a 404 (docs/leaderboards.md:20)", async () => {
    const api = newApi("r6-lb-404");
    expect((await api.post("/v1/leaderboards/b/players/nobody/score", { by: 1 })).status).toBe(404);
  });

  it("POST …/rank takes a read key and up to 1,000 players; 1,001 is a 400 (docs/leaderboards.md:17)", async () => {
    const api = newApi("r6-lb-rank");
    await join(api, "p", 1);
    const ok = await api.post("/v1/leaderboards/b/rank", { players: ["p", "q"] }, { key: "read" });
    expect(ok.status).toBe(200);
    expect(ok.body.unknown).toEqual(["q"]);
    const players = Array.from({ length: 1001 }, (_, i) => `p${i}`);
    expect((await api.post("/v1/leaderboards/b/rank", { players }, { key: "read" })).status).toBe(400);
  });

  it("keepSeasons 1..52: 53 is a 400 (docs/leaderboards.md:92)", async () => {
    const api = newApi("r6-lb-keep53");
    expect((await api.put("/v1/leaderboards/b", { reset: "daily", keepSeasons: 53 }, { key: "admin" })).status).toBe(
      400,
    );
    expect((await api.put("/v1/leaderboards/b", { reset: "daily", keepSeasons: 0 }, { key: "admin" })).status).toBe(
      400,
    );
  });
});

describe("docs/webhooks.md ## Endpoints: settings", () => {
  const hook = (extra: Record<string, unknown> = {}) => ({
    url: "https://hooks.example.com/in",
    events: ["trending.entered"],
    filter: { stream: "s" },
    secret: "0123456789abcdef",
    ...extra,
  });

  it("PUT is 201 created then 200 replaced; GET lists never the secret (docs/webhooks.md:11-12)", async () => {
    const api = newApi("r6-wh-put");
    const a = await api.put("/v1/webhooks/w", hook(), { key: "admin" });
    expect(a.status).toBe(201);
    expect(a.body.created).toBe(true);
    const b = await api.put("/v1/webhooks/w", hook(), { key: "admin" });
    expect(b.status).toBe(200);
    const list = await api.get("/v1/webhooks", { key: "admin" });
    expect(list.body.webhooks).toHaveLength(1);
    expect(list.body.webhooks[0].n).toBe(10); // "n ... default 10" (docs/webhooks.md ## Endpoints)
    expect(JSON.stringify(list.body)).not.toContain("0123456789abcdef");
  });

  it("read and ingest keys get 403 (docs/webhooks.md ## Endpoints heading)", async () => {
    const api = newApi("r6-wh-403");
    expect((await api.get("/v1/webhooks", { key: "read" })).status).toBe(403);
    expect((await api.put("/v1/webhooks/w", hook(), { key: "ingest" })).status).toBe(403);
  });

  it("secret 16..256, events 1..5, n 1..100, no localhost: each a 400 that writes nothing (docs/webhooks.md ## Endpoints)", async () => {
    const api = newApi("r6-wh-bad");
    for (const bad of [
      hook({ secret: "x".repeat(15) }),
      hook({ secret: "x".repeat(257) }),
      hook({ events: [] }),
      hook({ n: 0 }),
      hook({ n: 101 }),
      hook({ url: "http://hooks.example.com/in" }),
      hook({ url: "https://localhost/in" }),
      hook({ url: "https://0x7f000001/in" }),
      hook({ url: `https://hooks.example.com/${"a".repeat(2049)}` }),
    ]) {
      const res = await api.put("/v1/webhooks/w", bad, { key: "admin" });
      expect(res.status, JSON.stringify(bad).slice(0, 120)).toBe(400);
    }
    expect(await api.keys()).toEqual([]);
  });

  it("threshold defaults to 3 for trending.rising (docs/webhooks.md ## Endpoints)", async () => {
    const api = newApi("r6-wh-thr");
    await api.put("/v1/webhooks/w", hook({ events: ["trending.rising"], filter: undefined }), { key: "admin" });
    const list = await api.get("/v1/webhooks", { key: "admin" });
    expect(list.body.webhooks[0].threshold).toBe(3);
  });

  it("at most 20 webhooks: the 21st is refused (docs/webhooks.md ## Endpoints)", async () => {
    const api = newApi("r6-wh-20");
    for (let i = 0; i < 20; i++)
      expect((await api.put(`/v1/webhooks/w${i}`, hook(), { key: "admin" })).status).toBe(201);
    const res = await api.put("/v1/webhooks/w20", hook(), { key: "admin" });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect((await api.get("/v1/webhooks", { key: "admin" })).body.webhooks).toHaveLength(20);
  });
});

describe("more README / docs list and range claims", () => {
  it("counters: `from` after `to` is a 400 (docs/counters.md:96)", async () => {
    const api = newApi("r6-c-fromto");
    await api.post("/v1/counters/c/incr", { member: "a", period: "day" });
    const res = await api.get("/v1/counters/c/top?period=day&from=2026-11-22&to=2026-11-20");
    expect(res.status).toBe(400);
  });

  it("counters: min/max read at most 401 buckets, 17 days of hours is a 400 naming the limit (docs/counters.md:98-99)", async () => {
    const api = newApi("r6-c-minmax");
    await api.post("/v1/counters/c/incr", { member: "a", period: "hour" });
    const ok = await api.get("/v1/counters/c/top?period=hour&aggregate=max&from=2026-11-07&to=2026-11-22");
    expect(ok.status).toBe(200);
    const res = await api.get("/v1/counters/c/top?period=hour&aggregate=max&from=2026-11-05&to=2026-11-22");
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/401/);
  });

  it("presence members: least recently seen first, limit 1..1,000 (docs/presence.md:16, :93)", async () => {
    const api = newApi("r6-p-members");
    await api.post("/v1/presence/r/heartbeats", { ids: ["old"] });
    api.advance(MIN);
    await api.post("/v1/presence/r/heartbeats", { ids: ["new"] });
    const res = await api.get("/v1/presence/r/members?limit=10");
    expect(res.body.members.map((m: any) => m.id)).toEqual(["old", "new"]);
    expect((await api.get("/v1/presence/r/members?limit=1000")).status).toBe(200);
    expect((await api.get("/v1/presence/r/members?limit=1001")).status).toBe(400);
    expect((await api.get("/v1/presence/r/members?limit=0")).status).toBe(400);
  });

  // FIXED (was medium, code wrong): README ## API in brief says every list answers CSV and "the
  // paging the rows cannot hold rides in headers: `Link: <…>; rel="next"`". GET /v1/counters pages
  // by `offset`/`nextOffset` (docs/counters.md:11), which pagingHeaders (functions/csv.ts) did not
  // know, so a CSV client saw only the first page. It now maps a numeric `nextOffset` (and `next`)
  // to `Link: <…?offset=N>; rel="next"`; following it reaches the second page.
  it("GET /v1/counters?limit=1 as CSV carries Link rel=next when there is a next page (README ## API in brief)", async () => {
    const api = newApi("r6-csv-link");
    await api.post("/v1/counters/a/incr", { member: "x" });
    await api.post("/v1/counters/b/incr", { member: "x" });
    const json = await api.get("/v1/counters?limit=1");
    expect(json.body.nextOffset).toBe(1); // the JSON has a next page
    const res = await api.get("/v1/counters?limit=1", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    // review 23: the first page's Link follows its `nextCursor` (the list pages by cursor), as the boards' does
    const cursor = encodeURIComponent(json.body.nextCursor);
    expect(res.headers.get("link")).toBe(`</v1/counters?limit=1&cursor=${cursor}>; rel="next"`);
    const byOffset = await api.get("/v1/counters?limit=1&offset=1", { headers: { accept: "text/csv" } });
    expect(byOffset.headers.get("link")).toBeNull(); // offset 1 of 2 names: the last page
    const second = await api.get(`/v1/counters?limit=1&cursor=${cursor}`);
    const secondCsv = await api.get(`/v1/counters?limit=1&cursor=${cursor}`, { headers: { accept: "text/csv" } });
    expect(String(secondCsv.body)).toContain(second.body.items[0].counter);
    expect(secondCsv.headers.get("link")).toBeNull(); // the last page
  });

  it("a cursor list's CSV carries Link rel=next (presence members; README ## API in brief)", async () => {
    const api = newApi("r6-csv-cursor");
    await api.post("/v1/presence/r/heartbeats", { ids: ["a", "b"] });
    const res = await api.get("/v1/presence/r/members?limit=1", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("link")).toMatch(/cursor=.*rel="next"/);
  });

  it("/healthz without a key sends no Redis command; with a read key it PINGs (README ## API in brief)", async () => {
    const api = newApi("r6-health-cost");
    const bare = await api.cost(() => api.get("/healthz", { key: "none" }));
    expect(bare.result.status).toBe(200);
    expect(bare.commands).toBe(0);
    const deep = await api.cost(() => api.get("/healthz", { key: "read" }));
    expect(deep.result.status).toBe(200);
    expect(deep.commands).toBe(1);
  });

  it("trending edge cache: a second read is a hit with Age and costs no Redis command (README: Edge cache)", async () => {
    const api = track(createTestApi({ label: "r6-tr-hit", vars: { TRENDING_CACHE_SECONDS: "5" } }));
    await api.post("/v1/trending/s/events", { events: [{ member: "a" }] });
    const first = await api.get("/v1/trending/s/top?n=7");
    expect(first.headers.get("x-edgestats-cache")).toBe("miss");
    const second = await api.cost(() => api.get("/v1/trending/s/top?n=7"));
    expect(second.result.headers.get("x-edgestats-cache")).toBe("hit");
    expect(second.result.headers.get("age")).not.toBeNull();
    expect(second.requests).toBe(0);
  });

  it("trending history: one point per hour over `hours` (README: Rising and history)", async () => {
    const api = newApi("r6-tr-hist");
    await api.post("/v1/trending/s/events", { events: [{ member: "a", count: 2 }] });
    const res = await api.get("/v1/trending/s/history?member=a&hours=48");
    expect(res.status).toBe(200);
    const points = res.body.points ?? res.body.items;
    expect(points.length).toBeGreaterThanOrEqual(48);
    expect(points.at(-1).count).toBe(2);
    expect(points.every((p: any) => "maxError" in p)).toBe(true);
  });
});

describe("docs/trending.md and docs/presence.md: orders, defaults and ranges", () => {
  it("top: ties by member in byte order (docs/trending.md:48)", async () => {
    const api = newApi("r6-tr-ties");
    await api.post("/v1/trending/s/events", { events: [{ member: "b" }, { member: "a" }, { member: "c", count: 2 }] });
    const res = await api.get("/v1/trending/s/top?n=10");
    expect(res.body.items.map((i: any) => i.member)).toEqual(["c", "a", "b"]);
    expect(res.body.items.map((i: any) => i.rank)).toEqual([1, 2, 3]);
  });

  it("GET /v1/trending lists stream names in byte order (docs/trending.md:25)", async () => {
    const api = newApi("r6-tr-list");
    for (const s of ["zeta", "Alpha", "beta"])
      await api.post(`/v1/trending/${s}/events`, { events: [{ member: "m" }] });
    const res = await api.get("/v1/trending");
    expect(res.body.streams.map((x: any) => x.stream ?? x.name ?? x)).toEqual(["Alpha", "beta", "zeta"]);
  });

  it("history: `hours` defaults to 48 and 169 is a 400 (docs/trending.md:23)", async () => {
    const api = newApi("r6-tr-hdef");
    const res = await api.get("/v1/trending/s/history?member=a");
    expect(res.status).toBe(200);
    expect(res.body.hours ?? (res.body.points ?? res.body.items).length - 1).toBeGreaterThanOrEqual(48);
    expect((await api.get("/v1/trending/s/history?member=a&hours=169")).status).toBe(400);
  });

  it("rising: n 1..100 (docs/trending.md:20)", async () => {
    const api = newApi("r6-tr-rn");
    expect((await api.get("/v1/trending/s/rising?n=100")).status).toBe(200);
    expect((await api.get("/v1/trending/s/rising?n=101")).status).toBe(400);
    expect((await api.get("/v1/trending/s/rising?baseline=51h")).status).toBe(400);
  });

  it("a member with a control character is refused (docs/trending.md:197)", async () => {
    const api = newApi("r6-tr-ctl");
    const res = await api.post("/v1/trending/s/events", { events: [{ member: "a\u0000err" }] });
    expect(res.status).toBe(400);
    expect(await api.keys()).toEqual([]);
  });

  it("presence history: hours 1..24, points oldest first (docs/presence.md:17)", async () => {
    const api = newApi("r6-p-hist");
    const res = await api.get("/v1/presence/r/history?hours=24");
    expect(res.status).toBe(200);
    const at = res.body.points.map((p: any) => p.at);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect((await api.get("/v1/presence/r/history?hours=25")).status).toBe(400);
    expect((await api.get("/v1/presence/r/history?hours=0")).status).toBe(400);
  });

  it("GET /v1/presence: most recently active first, limit 1..1,000 (docs/presence.md:18)", async () => {
    const api = newApi("r6-p-rooms");
    await api.post("/v1/presence/older/heartbeats", { ids: ["a"] });
    api.advance(MIN);
    await api.post("/v1/presence/newer/heartbeats", { ids: ["a"] });
    const res = await api.get("/v1/presence");
    expect(res.body.rooms.map((r: any) => r.room ?? r.name ?? r).slice(0, 2)).toEqual(["newer", "older"]);
    expect((await api.get("/v1/presence?limit=1001")).status).toBe(400);
  });

  it("leaderboards: page 1..1,000,000 and a page past the end is items: [] (docs/leaderboards.md:48)", async () => {
    const api = newApi("r6-lb-page");
    await api.put("/v1/leaderboards/b/players/p", { name: "p" });
    const past = await api.get("/v1/leaderboards/b?page=1000000");
    expect(past.status).toBe(200);
    expect(past.body.items).toEqual([]);
    expect((await api.get("/v1/leaderboards/b?page=1000001")).status).toBe(400);
  });

  it("counters list: limit ≤ 1,000 (docs/counters.md:11)", async () => {
    const api = newApi("r6-c-lim");
    expect((await api.get("/v1/counters?limit=1000")).status).toBe(200);
    expect((await api.get("/v1/counters?limit=1001")).status).toBe(400);
  });
});

describe("more statuses and caps (README ## API in brief, ### Counters, ### Histograms, ### Leaderboards)", () => {
  it("a write with a non-JSON content type is a 415 writing nothing (README ## API in brief)", async () => {
    const api = newApi("r6-415");
    const res = await api.post("/v1/counters/c/incr", undefined, {
      raw: JSON.stringify({ member: "a" }),
      headers: { "content-type": "text/plain" },
    });
    expect(res.status).toBe(415);
    expectEnvelope(res.body);
    expect(await api.keys()).toEqual([]);
  });

  it("sorted is capped at 10,000 members: 10,001 is a 400 too_many_members (README ### Counters; docs/counters.md:267)", async () => {
    const api = newApi("r6-c-sorted");
    for (let b = 0; b < 10; b++) {
      const items = Array.from({ length: 1000 }, (_, i) => ({ member: `m${b * 1000 + i}` }));
      expect((await api.post("/v1/counters/c/incr", { items })).status).toBe(200);
    }
    expect((await api.get("/v1/counters/c/sorted?by=member")).status).toBe(200);
    await api.post("/v1/counters/c/incr", { member: "one-more" });
    const res = await api.get("/v1/counters/c/sorted?by=member");
    expect(res.status).toBe(400);
    expectEnvelope(res.body, "too_many_members");
  });

  it("sorted?by=member orders numerically when every member is a number (README ### Counters)", async () => {
    const api = newApi("r6-c-numeric");
    await api.post("/v1/counters/c/incr", { items: [{ member: "10" }, { member: "9" }, { member: "100" }] });
    const res = await api.get("/v1/counters/c/sorted?by=member");
    expect(res.body.numeric).toBe(true);
    expect(res.body.items.map((i: any) => i.member)).toEqual(["9", "10", "100"]);
  });

  it("histogram read: buckets ordered by value, over 400 days a 400 (README ### Histograms)", async () => {
    const api = newApi("r6-h-read");
    await api.put("/v1/histograms/h", { bucketWidth: 10 }, { key: "admin" });
    await api.post("/v1/histograms/h/observations", { values: [35, 5, 15, 15] });
    const res = await api.get("/v1/histograms/h");
    expect(res.status).toBe(200);
    expect(res.body.count).toBe(4);
    expect(res.body.sum).toBe(70);
    expect(res.body.buckets.map((b: any) => b.lower)).toEqual([0, 10, 30]);
    const to = new Date(api.now).toISOString().slice(0, 10);
    const from = new Date(api.now - 401 * DAY).toISOString().slice(0, 10);
    expect((await api.get(`/v1/histograms/h?from=${from}&to=${to}`)).status).toBe(400);
  });

  it("a board whose last player leaves leaves GET /v1/leaderboards (README ### Leaderboards)", async () => {
    const api = newApi("r6-lb-leave");
    await api.put("/v1/leaderboards/b/players/p", { name: "p" });
    expect((await api.get("/v1/leaderboards")).body.boards.length).toBe(1);
    expect((await api.del("/v1/leaderboards/b/players/p")).status).toBeLessThan(300);
    expect((await api.get("/v1/leaderboards")).body.boards).toEqual([]);
  });

  it("DELETE a room is admin only and a 204 (docs/presence.md:19)", async () => {
    const api = newApi("r6-p-delroom");
    await api.post("/v1/presence/r/heartbeats", { ids: ["a"] });
    expect((await api.del("/v1/presence/r", { key: "ingest" })).status).toBe(403);
    expect((await api.del("/v1/presence/r", { key: "admin" })).status).toBe(204);
    expect((await api.get("/v1/presence/r")).body.online).toBe(0);
  });
});

describe("docs/guarantees.md Optional rate limiting; README /healthz", () => {
  it("429 rate_limited with Retry-After ≤ 10 s, per API key (docs/guarantees.md:152-156)", async () => {
    const api = track(
      createTestApi({ label: "r6-rl", vars: { RATE_LIMIT_PER_10S: "2" }, start: "2026-11-22T12:30:00Z" }),
    );
    expect((await api.get("/v1/counters")).status).toBe(200);
    expect((await api.get("/v1/counters")).status).toBe(200);
    const over = await api.get("/v1/counters");
    expect(over.status).toBe(429);
    expectEnvelope(over.body, "rate_limited");
    const retry = Number(over.headers.get("retry-after"));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(10);
    // another key has its own window
    expect((await api.get("/v1/counters", { key: "admin" })).status).toBe(200);
    // (the next window is not checked: the limiter runs on the real clock, not the request clock)
  });

  it("/healthz: an ingest key alone sends no command; ?deep=1 with it PINGs (README ## API in brief)", async () => {
    const api = newApi("r6-health-deep");
    const plain = await api.cost(() => api.get("/healthz", { key: "ingest" }));
    expect(plain.result.status).toBe(200);
    expect(plain.commands).toBe(0);
    const deep = await api.cost(() => api.get("/healthz?deep=1", { key: "ingest" }));
    expect(deep.result.status).toBe(200);
    expect(deep.commands).toBe(1);
  });
});

describe("response shapes the docs' endpoint tables give (exact key sets)", () => {
  const keysOf = (o: object) => Object.keys(o).sort();

  it("counters: list, incr, top, member, range, sorted (docs/counters.md:11-16)", async () => {
    const api = newApi("r6-shape-c");
    const incr = await api.post("/v1/counters/c/incr", { member: "a", by: 2 });
    expect(keysOf(incr.body)).toEqual(["results"]);
    expect(keysOf(incr.body.results[0])).toEqual(["member", "score"]);
    const list = await api.get("/v1/counters");
    expect(keysOf(list.body)).toEqual(["counters", "items", "nextCursor", "nextOffset"]);
    expect(keysOf(list.body.items[0])).toEqual(["counter", "lastWriteAt"]);
    const top = await api.get("/v1/counters/c/top?n=10");
    expect(keysOf(top.body)).toEqual(["counter", "items"]);
    expect(keysOf(top.body.items[0])).toEqual(["member", "rank", "score"]);
    expect(keysOf((await api.get("/v1/counters/c/members/a")).body)).toEqual([
      "member",
      "rank",
      "rankFromBottom",
      "score",
    ]);
    expect((await api.get("/v1/counters/c/members/zz")).status).toBe(404);
    expect(keysOf((await api.get("/v1/counters/c/range?min=-inf&max=%2Binf")).body)).toEqual(["count", "items"]);
    expect(keysOf((await api.get("/v1/counters/c/sorted?by=member")).body)).toEqual([
      "by",
      "count",
      "items",
      "numeric",
      "order",
    ]);
    const ranged = await api.get("/v1/counters/c/top?period=day");
    expect(keysOf(ranged.body.range ?? {})).toEqual(["aggregate", "buckets", "finished", "from", "period", "to"]);
  });

  it("presence: room, day, _total, members, history, rooms (docs/presence.md:11-18)", async () => {
    const api = newApi("r6-shape-p");
    await api.post("/v1/presence/r/heartbeats", { id: "a" });
    expect(keysOf((await api.get("/v1/presence/r")).body)).toEqual(
      ["activeToday", "day", "newToday", "online", "peakAt", "peakToday", "room", "timeoutSeconds"].sort(),
    );
    const day = new Date(api.now - DAY).toISOString().slice(0, 10);
    expect(keysOf((await api.get(`/v1/presence/r?day=${day}`)).body)).toEqual(
      ["active", "day", "from", "new", "peak", "peakAt", "room"].sort(),
    );
    expect(keysOf((await api.get("/v1/presence/_total")).body)).toEqual(
      ["activeToday", "activeTodayError", "day", "online", "onlineAt", "peakAt", "peakToday"].sort(),
    );
    const members = await api.get("/v1/presence/r/members");
    expect(keysOf(members.body)).toEqual(["members", "nextCursor"]);
    expect(keysOf(members.body.members[0])).toEqual(["id", "lastSeen"]);
    expect(keysOf((await api.get("/v1/presence/r/history")).body)).toEqual(["points"]);
    expect(keysOf((await api.get("/v1/presence")).body)).toEqual(["nextCursor", "rooms", "truncated"]);
  });

  it("histograms: list, PUT, read (docs/histograms.md:12-19)", async () => {
    const api = newApi("r6-shape-h");
    const put = await api.put("/v1/histograms/h", { bucketWidth: 10 }, { key: "admin" });
    expect(keysOf(put.body)).toEqual(["bucketWidth", "created", "createdAt", "histogram", "retentionDays", "unit"]);
    expect(keysOf((await api.get("/v1/histograms")).body)).toEqual(["histograms", "next", "nextCursor", "total"]);
    const read = await api.get("/v1/histograms/h");
    expect(keysOf(read.body)).toEqual(
      [
        "histogram",
        "unit",
        "bucketWidth",
        "from",
        "to",
        "count",
        "sum",
        "min",
        "max",
        "mean",
        "p50",
        "p90",
        "p99",
        "buckets",
        "top",
      ].sort(),
    );
    // "when count is 0, sum is 0 and min, max, mean are null" (docs/histograms.md:23)
    expect([read.body.count, read.body.sum, read.body.min, read.body.max, read.body.mean]).toEqual([
      0,
      0,
      null,
      null,
      null,
    ]);
    expect((await api.del("/v1/histograms/never", { key: "admin" })).status).toBe(204); // "whether or not it existed"
  });

  it("leaderboards: PUT board, join, score, player, page, list (docs/leaderboards.md:12-22)", async () => {
    const api = newApi("r6-shape-lb");
    const board = await api.put("/v1/leaderboards/b", {}, { key: "admin" });
    expect(keysOf(board.body)).toEqual(
      [
        "board",
        "ties",
        "createdAt",
        "players",
        "created",
        "reset",
        "keepSeasons",
        "minScore",
        "maxScore",
        "maxIncrement",
        "season",
      ].sort(),
    );
    const join = await api.put("/v1/leaderboards/b/players/p", { name: "P" });
    expect(keysOf(join.body)).toEqual(["created", "joinedAt", "meta", "name", "player", "rank", "score"]);
    expect(keysOf((await api.post("/v1/leaderboards/b/players/p/score", { by: 1 })).body)).toEqual(["rank", "score"]);
    expect(keysOf((await api.get("/v1/leaderboards/b/players/p")).body)).toEqual(
      [
        "player",
        "name",
        "meta",
        "score",
        "rank",
        "joinedAt",
        "percentile",
        "total",
        "previousRank",
        "bestRank",
        "season",
      ].sort(),
    );
    const page = await api.get("/v1/leaderboards/b");
    expect(keysOf(page.body)).toEqual(["items", "limit", "page", "season", "ties", "total"]);
    expect(keysOf(page.body.items[0])).toEqual(["bestRank", "name", "player", "previousRank", "rank", "score"]);
    expect(keysOf((await api.get("/v1/leaderboards")).body)).toEqual(["boards", "next", "nextCursor", "total"]);
  });
});

describe("response shapes: trending and the rest of leaderboards (docs/trending.md:9-25, docs/leaderboards.md:16-24)", () => {
  const keysOf = (o: object) => Object.keys(o).sort();

  it("trending top, member, rising, history, list", async () => {
    const api = newApi("r6-shape-tr");
    await api.post("/v1/trending/s/events", { events: [{ member: "a" }] });
    const top = await api.get("/v1/trending/s/top");
    expect(keysOf(top.body)).toEqual(["exact", "generatedAt", "items", "maxError", "stream", "topProven", "window"]);
    expect(keysOf(top.body.window)).toEqual(["from", "hours", "to"]);
    expect(keysOf(top.body.items[0])).toEqual(["count", "member", "rank"]);
    const member = await api.get("/v1/trending/s/members/a");
    for (const k of ["member", "count", "rank", "rankExact", "window", "exact", "maxError", "generatedAt"])
      expect(member.body, k).toHaveProperty(k);
    const rising = await api.get("/v1/trending/s/rising");
    expect(keysOf(rising.body)).toEqual(
      ["stream", "baselineHours", "elapsed", "candidates", "items", "exact", "maxError", "generatedAt"].sort(),
    );
    expect(keysOf(rising.body.items[0])).toEqual(["baseline", "count", "member", "ratio", "score"]);
    const history = await api.get("/v1/trending/s/history?member=a");
    expect(keysOf(history.body)).toEqual(["exact", "generatedAt", "hours", "member", "points", "stream"]);
    expect(history.body.hours).toBe(48); // default 48
    expect(keysOf(history.body.points[0])).toEqual(["count", "hour", "maxError"]);
    expect(keysOf((await api.get("/v1/trending")).body)).toEqual(["nextCursor", "streams"]);
  });

  it("leaderboards seasons, rank, scores, around; removing an absent player is a 204", async () => {
    const api = newApi("r6-shape-lb2");
    await api.put("/v1/leaderboards/b", { reset: "daily" }, { key: "admin" });
    await api.put("/v1/leaderboards/b/players/p", { name: "P", score: 3 });
    const seasons = await api.get("/v1/leaderboards/b/seasons");
    expect(keysOf(seasons.body)).toEqual(["board", "current", "reset", "seasons"]);
    const rank = await api.post("/v1/leaderboards/b/rank", { players: ["p"] }, { key: "read" });
    expect(keysOf(rank.body)).toEqual(["items", "season", "unknown"]);
    expect(keysOf(rank.body.items[0])).toEqual(["name", "player", "rank", "score", "subsetRank"]);
    const scores = await api.post("/v1/leaderboards/b/scores", { player: "p", by: 1 });
    expect(keysOf(scores.body)).toEqual(["results"]);
    expect(keysOf(scores.body.results[0])).toEqual(["player", "rank", "score"]);
    const around = await api.get("/v1/leaderboards/b/players/p/around?k=0");
    expect(around.status).toBe(200); // k 0..50
    expect(keysOf(around.body)).toEqual(["items", "player", "rank", "season"]);
    expect((await api.del("/v1/leaderboards/b/players/nobody")).status).toBe(204);
  });
});

describe("CSV paging of the offset lists (README ## API in brief)", () => {
  // FIXED (same cause as the counters list above; was medium, code wrong): /v1/histograms pages by
  // `offset`/`next` (docs/histograms.md:12); its CSV carried X-Total-Count but no Link, so a CSV
  // client could not reach page 2. pagingHeaders now also maps a numeric `next` to `?offset=N`.
  it("GET /v1/histograms?limit=1 as CSV carries X-Total-Count and Link rel=next", async () => {
    const api = newApi("r6-csv-h");
    await api.put("/v1/histograms/h1", { bucketWidth: 1 }, { key: "admin" });
    await api.put("/v1/histograms/h2", { bucketWidth: 1 }, { key: "admin" });
    const res = await api.get("/v1/histograms?limit=1", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-total-count")).toBe("2");
    // review 23: the first page's Link follows its `nextCursor` (the list pages by cursor), as the counters' does
    const json = await api.get("/v1/histograms?limit=1");
    expect(json.body.next).toBe(1); // the JSON still says where the next page is by offset
    const cursor = encodeURIComponent(json.body.nextCursor);
    expect(res.headers.get("link")).toBe(`</v1/histograms?limit=1&cursor=${cursor}>; rel="next"`);
    const byOffset = await api.get("/v1/histograms?limit=1&offset=1", { headers: { accept: "text/csv" } });
    expect(byOffset.headers.get("link")).toBeNull(); // offset 1 of 2 names: the last page
    const secondCsv = await api.get(`/v1/histograms?limit=1&cursor=${cursor}`, { headers: { accept: "text/csv" } });
    expect(String(secondCsv.body)).toContain("h1");
    expect(secondCsv.headers.get("link")).toBeNull(); // the last page
  });

  it("GET /v1/leaderboards?limit=1&offset=0 as CSV carries Link rel=next", async () => {
    const api = newApi("r6-csv-lb");
    await api.put("/v1/leaderboards/b1/players/p", { name: "p" });
    await api.put("/v1/leaderboards/b2/players/p", { name: "p" });
    const res = await api.get("/v1/leaderboards?limit=1&offset=0", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("link")).toMatch(/rel="next"/);
  });
});
