import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);

describe("trending ingest and top N", () => {
  const api = createTestApi({ label: "trend-ingest", start: T0 });
  afterAll(() => api.cleanup());

  it("records a single event and a batch, and ranks them (ties by member)", async () => {
    const one = await api.post("/v1/trending/searches/events", { member: "555-0100" });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ accepted: 1 });
    const batch = await api.post("/v1/trending/searches/events", {
      events: [
        { member: "555-0100", count: 2 },
        { member: "555-0199" },
        { member: "555-0142", count: 5 },
        { member: "555-0199" },
        { member: "555-0001", count: 2 },
      ],
    });
    expect(batch.status).toBe(200);
    expect(batch.body).toEqual({ accepted: 5 });
    const top = await api.get("/v1/trending/searches/top?n=10&window=24h");
    expect(top.status).toBe(200);
    expect(top.body.items).toEqual([
      { rank: 1, member: "555-0142", count: 5 },
      { rank: 2, member: "555-0100", count: 3 },
      { rank: 3, member: "555-0001", count: 2 },
      { rank: 4, member: "555-0199", count: 2 },
    ]);
    expect(top.body.exact).toBe(true);
    expect(top.body.topProven).toBe(true);
    expect(top.body.maxError).toBe(0);
    // `distinct` would need the merge this read avoids: it is gone, not guessed
    expect(top.body).not.toHaveProperty("distinct");
    expect(top.body.window).toEqual({ hours: 24, from: Date.UTC(2026, 10, 21, 12), to: Date.UTC(2026, 10, 22, 13) });
    expect(top.body.generatedAt).toBe(T0);
    const two = await api.get("/v1/trending/searches/top?n=3");
    expect(two.body.items.map((i: any) => i.member)).toEqual(["555-0142", "555-0100", "555-0001"]);
  });

  it("looks up one member's count and rank, null for an unknown member", async () => {
    const m = await api.get("/v1/trending/searches/members/555-0199?window=24h");
    expect(m.status).toBe(200);
    expect(m.body).toMatchObject({ member: "555-0199", count: 2, rank: 4, exact: true, maxError: 0 });
    const none = await api.get("/v1/trending/searches/members/nobody");
    expect(none.body).toMatchObject({ member: "nobody", count: 0, rank: null });
  });

  it("puts late events in their own hour and moves the window across hours with the clock", async () => {
    await api.post("/v1/trending/hours/events", {
      events: [
        { member: "old", count: 7, at: T0 - 3 * HOUR },
        { member: "iso", count: 4, at: "2026-11-22T11:10:00Z" },
        { member: "now", count: 1 },
        { member: "soon", count: 2, at: T0 + 4 * MINUTE },
      ],
    });
    const w1 = await api.get("/v1/trending/hours/top?window=1h");
    // 1h = the finished 11:00 hour plus the current 12:00 hour: "old" (09:xx) is outside
    expect(w1.body.items).toEqual([
      { rank: 1, member: "iso", count: 4 },
      { rank: 2, member: "soon", count: 2 },
      { rank: 3, member: "now", count: 1 },
    ]);
    expect(w1.body.window).toEqual({ hours: 1, from: Date.UTC(2026, 10, 22, 11), to: Date.UTC(2026, 10, 22, 13) });
    const w3 = await api.get("/v1/trending/hours/top?window=3h");
    expect(w3.body.items[0]).toEqual({ rank: 1, member: "old", count: 7 });

    api.advance(HOUR); // 13:30
    await api.post("/v1/trending/hours/events", { member: "now", count: 10 });
    const later = await api.get("/v1/trending/hours/top?window=1h");
    expect(later.body.items).toEqual([
      { rank: 1, member: "now", count: 11 },
      { rank: 2, member: "soon", count: 2 },
    ]);
    // a late event into an hour already in the cached union is seen at once
    await api.post("/v1/trending/hours/events", { member: "soon", count: 20, at: T0 });
    const again = await api.get("/v1/trending/hours/top?window=1h");
    expect(again.body.items[0]).toEqual({ rank: 1, member: "soon", count: 22 });
    api.setNow(T0);
  });

  it("survives hours without any writes", async () => {
    const quiet = createTestApi({ label: "trend-quiet", start: T0 });
    try {
      await quiet.post("/v1/trending/q/events", { member: "a", count: 3 });
      quiet.advance(5 * HOUR);
      const top = await quiet.get("/v1/trending/q/top?window=24h");
      expect(top.status).toBe(200);
      expect(top.body.items).toEqual([{ rank: 1, member: "a", count: 3 }]);
      const empty = await quiet.get("/v1/trending/q/top?window=2h");
      expect(empty.body.items).toEqual([]);
      expect(empty.body.exact).toBe(true);
      const never = await quiet.get("/v1/trending/never-written/top");
      expect(never.status).toBe(200);
      expect(never.body.items).toEqual([]);
      const job = await quiet.post("/internal/jobs/compact", undefined, { key: "admin" });
      expect(job.status).toBe(200);
      expect(job.body.result.streams).toBe(1);
      expect((await quiet.get("/v1/trending/q/top?window=24h")).body.items).toEqual([
        { rank: 1, member: "a", count: 3 },
      ]);
    } finally {
      await quiet.cleanup();
    }
  });

  it("replays a request with the same Idempotency-Key without counting twice", async () => {
    const headers = { "idempotency-key": "trend-once-1" };
    const first = await api.post("/v1/trending/idem/events", { member: "x", count: 2 }, { headers });
    const second = await api.post("/v1/trending/idem/events", { member: "x", count: 2 }, { headers });
    expect(first.body).toEqual({ accepted: 1 });
    expect(second.body).toEqual({ accepted: 1 });
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get("/v1/trending/idem/members/x")).body.count).toBe(2);
    const conflict = await api.post("/v1/trending/idem/events", { member: "x", count: 3 }, { headers });
    expect(conflict.status).toBe(409);
  });

  it("lists streams from the registry, sorted, and delete removes every key and the entry", async () => {
    const list = await api.get("/v1/trending");
    expect(list.status).toBe(200);
    expect(list.body.streams).toEqual(["hours", "idem", "searches"]);
    expect((await api.del("/v1/trending/hours", { key: "ingest" })).status).toBe(403);
    const del = await api.del("/v1/trending/hours", { key: "admin" });
    expect(del.status).toBe(204);
    expect((await api.get("/v1/trending")).body.streams).toEqual(["idem", "searches"]);
    expect((await api.keys()).filter((k) => k.includes(":trending:hours:"))).toEqual([]);
    expect((await api.get("/v1/trending/hours/top")).body.items).toEqual([]);
    expect((await api.del("/v1/trending/hours", { key: "admin" })).status).toBe(204);
  });

  it("describes every trending endpoint in the OpenAPI document", async () => {
    const doc = await api.get("/openapi.json", { key: "none" });
    for (const [path, method] of [
      ["/v1/trending", "get"],
      ["/v1/trending/{stream}/events", "post"],
      ["/v1/trending/{stream}/top", "get"],
      ["/v1/trending/{stream}/members/{member}", "get"],
      ["/v1/trending/{stream}", "delete"],
    ] as const) {
      expect(doc.body.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
  });
});

describe("one Redis round trip per call", () => {
  const api = createTestApi({ label: "trend-cost", start: T0 });
  afterAll(() => api.cleanup());

  it("costs exactly one HTTP request for each trending endpoint", async () => {
    const events = Array.from({ length: 1000 }, (_, i) => ({
      member: `m${i % 137}`,
      count: 1 + (i % 3),
      at: T0 - (i % 6) * HOUR,
    }));
    // warm every script (the first call after a flush pays the NOSCRIPT fallback)
    await api.post("/v1/trending/cost/events", { member: "warm" });
    await api.get("/v1/trending/cost/top");
    await api.get("/v1/trending/cost/members/warm");
    await api.get("/v1/trending");
    await api.del("/v1/trending/warm-only", { key: "admin" });

    const write = await api.cost(() => api.post("/v1/trending/cost/events", { events }));
    expect(write.result.status).toBe(200);
    expect(write.result.body.accepted).toBe(1000);
    expect(write.requests).toBe(1);
    const top = await api.cost(() => api.get("/v1/trending/cost/top?n=5&window=24h"));
    expect(top.result.body.items).toHaveLength(5);
    expect(top.requests).toBe(1);
    const member = await api.cost(() => api.get("/v1/trending/cost/members/m3?window=48h"));
    expect(member.result.body.rank).toBeGreaterThan(0);
    expect(member.requests).toBe(1);
    const list = await api.cost(() => api.get("/v1/trending"));
    expect(list.result.body.streams).toEqual(["cost"]);
    expect(list.requests).toBe(1);
    const del = await api.cost(() => api.del("/v1/trending/cost", { key: "admin" }));
    expect(del.result.status).toBe(204);
    expect(del.requests).toBe(1);
  });
});

describe("bad input gets 400 and writes nothing", () => {
  const api = createTestApi({ label: "trend-bad", start: T0 });
  afterAll(() => api.cleanup());

  const cases: [string, string, unknown][] = [
    ["bad name", "/v1/trending/-bad/events", { member: "a" }],
    ["name with colon", "/v1/trending/a:b/events", { member: "a" }],
    ["65-char name", `/v1/trending/${"n".repeat(65)}/events`, { member: "a" }],
    ["empty member", "/v1/trending/s/events", { member: "" }],
    ["257-byte member", "/v1/trending/s/events", { member: "x".repeat(257) }],
    ["control character", "/v1/trending/s/events", { member: "a\u0001b" }],
    ["NaN count (null in JSON)", "/v1/trending/s/events", { member: "a", count: Number.NaN }],
    ["negative count", "/v1/trending/s/events", { member: "a", count: -1 }],
    ["zero count", "/v1/trending/s/events", { member: "a", count: 0 }],
    ["huge count", "/v1/trending/s/events", { member: "a", count: 1e13 }],
    ["string count", "/v1/trending/s/events", { member: "a", count: "5" }],
    ["1,001-event batch", "/v1/trending/s/events", { events: Array.from({ length: 1001 }, () => ({ member: "a" })) }],
    ["empty batch", "/v1/trending/s/events", { events: [] }],
    ["one bad event in a batch", "/v1/trending/s/events", { events: [{ member: "a" }, { member: "" }] }],
    ["at beyond retention", "/v1/trending/s/events", { member: "a", at: T0 - 51 * HOUR }],
    [
      "at in a batch beyond retention",
      "/v1/trending/s/events",
      { events: [{ member: "a" }, { member: "b", at: T0 - 60 * HOUR }] },
    ],
    ["at 6 minutes ahead", "/v1/trending/s/events", { member: "a", at: T0 + 6 * MINUTE }],
    ["at not a time", "/v1/trending/s/events", { member: "a", at: "yesterday" }],
    ["unknown field", "/v1/trending/s/events", { member: "a", weight: 2 }],
  ];

  for (const [label, path, body] of cases) {
    it(`rejects ${label}`, async () => {
      const res = await api.post(path, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      expect(res.body.error.message.length).toBeGreaterThan(10);
      expect(await api.keys()).toEqual([]);
    });
  }

  it("rejects NaN written literally as malformed JSON", async () => {
    const res = await api.post("/v1/trending/s/events", undefined, {
      raw: '{"member":"a","count":NaN}',
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(await api.keys()).toEqual([]);
  });

  it("names the bad field of a batch in details", async () => {
    const res = await api.post("/v1/trending/s/events", { events: [{ member: "a" }, { member: "b", at: T0 + HOUR }] });
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((d: any) => d.path)).toContain("events.1.at");
  });

  for (const query of ["n=0", "n=101", "n=abc", "window=0h", "window=200h", "window=51h", "window=3w"]) {
    it(`rejects top?${query}`, async () => {
      const res = await api.get(`/v1/trending/s/top?${query}`);
      expect(res.status).toBe(400);
      expect(await api.keys()).toEqual([]);
    });
  }

  it("rejects a bad member or window on member lookup and a bad name on delete", async () => {
    expect((await api.get(`/v1/trending/s/members/${"y".repeat(257)}`)).status).toBe(400);
    expect((await api.get("/v1/trending/s/members/a?window=99d")).status).toBe(400);
    expect((await api.get("/v1/trending/-x/members/a")).status).toBe(400);
    expect((await api.del("/v1/trending/-x", { key: "admin" })).status).toBe(400);
    expect(await api.keys()).toEqual([]);
  });

  it("accepts an event 4 minutes ahead and one 49 hours back", async () => {
    const res = await api.post("/v1/trending/ok/events", {
      events: [
        { member: "a", at: T0 + 4 * MINUTE },
        { member: "b", at: T0 - 49 * HOUR },
      ],
    });
    expect(res.status).toBe(200);
    expect((await api.get("/v1/trending/ok/members/b?window=50h")).body.count).toBe(1);
  });
});

describe("edge cache", () => {
  const api = createTestApi({ label: "trend-cache", start: T0, vars: { TRENDING_CACHE_SECONDS: "5" } });
  const other = createTestApi({ label: "trend-cache2", start: T0, vars: { TRENDING_CACHE_SECONDS: "5" } });
  afterAll(async () => {
    await api.cleanup();
    await other.cleanup();
  });

  it("serves a repeated top-N read from the Workers cache with no Redis command", async () => {
    await api.post("/v1/trending/hot/events", { member: "a", count: 2 });
    const miss = await api.cost(() => api.get("/v1/trending/hot/top?n=3"));
    expect(miss.requests).toBe(1);
    expect(miss.result.headers.get("x-edgestats-cache")).toBe("miss");
    expect(miss.result.headers.get("cache-control")).toBe("private, max-age=5");
    api.advance(2000);
    const hit = await api.cost(() => api.get("/v1/trending/hot/top?n=3"));
    expect(hit.requests).toBe(0);
    expect(hit.commands).toBe(0);
    expect(hit.result.headers.get("x-edgestats-cache")).toBe("hit");
    expect(hit.result.body).toEqual(miss.result.body);
    expect(hit.result.body.generatedAt).toBe(T0);
    expect(hit.result.headers.get("age")).toBe("2");

    // writes are never served from the cache; a fresh read on request sees them
    const write = await api.cost(() => api.post("/v1/trending/hot/events", { member: "b", count: 9 }));
    expect(write.requests).toBe(1);
    const fresh = await api.cost(() =>
      api.get("/v1/trending/hot/top?n=3", { headers: { "cache-control": "no-cache" } }),
    );
    expect(fresh.requests).toBe(1);
    expect(fresh.result.headers.get("x-edgestats-cache")).toBe("bypass");
    expect(fresh.result.body.items[0]).toEqual({ rank: 1, member: "b", count: 9 });
    expect(fresh.result.body.generatedAt).toBe(T0 + 2000);
  });

  it("keys the cache by n, window and deployment prefix", async () => {
    const otherN = await api.cost(() => api.get("/v1/trending/hot/top?n=4"));
    expect(otherN.requests).toBe(1);
    const otherPrefix = await other.cost(() => other.get("/v1/trending/hot/top?n=3"));
    expect(otherPrefix.requests).toBe(1);
    expect(otherPrefix.result.body.items).toEqual([]);
  });

  it("honours a shorter max-age on the request, and says how long a hit stays fresh", async () => {
    // a long cache, so the Cache API's own (real-time) expiry cannot decide this test on a slow machine
    const slow = createTestApi({ label: "trend-cache3", start: T0, vars: { TRENDING_CACHE_SECONDS: "60" } });
    try {
      await slow.post("/v1/trending/hot/events", { member: "a", count: 2 });
      expect((await slow.get("/v1/trending/hot/top")).headers.get("x-edgestats-cache")).toBe("miss");
      slow.advance(10_000);
      const hit = await slow.cost(() =>
        slow.get("/v1/trending/hot/top", { headers: { "cache-control": "max-age=30" } }),
      );
      expect(hit.requests).toBe(0);
      expect(hit.result.headers.get("age")).toBe("10");
      expect(hit.result.headers.get("cache-control")).toBe("private, max-age=50");
      // 10 s old is too old for a client that accepts 5 s: computed again, and cached for the next reader
      await slow.post("/v1/trending/hot/events", { member: "b", count: 9 });
      const tooOld = await slow.cost(() =>
        slow.get("/v1/trending/hot/top", { headers: { "cache-control": "max-age=5" } }),
      );
      expect(tooOld.requests).toBe(1);
      expect(tooOld.result.headers.get("x-edgestats-cache")).toBe("miss");
      expect(tooOld.result.body.items[0]).toEqual({ rank: 1, member: "b", count: 9 });
      expect(tooOld.result.body.generatedAt).toBe(T0 + 10_000);
      const after = await slow.cost(() =>
        slow.get("/v1/trending/hot/top", { headers: { "cache-control": "max-age=5" } }),
      );
      expect(after.requests).toBe(0);
      expect(after.result.body).toEqual(tooOld.result.body);
      expect(
        (await slow.get("/v1/trending/hot/top", { headers: { "cache-control": "max-age=0" } })).headers.get(
          "x-edgestats-cache",
        ),
      ).toBe("bypass");
    } finally {
      await slow.cleanup();
    }
  });

  it("does not cache errors or member lookups", async () => {
    expect((await api.get("/v1/trending/hot/top?n=0")).status).toBe(400);
    const member = await api.cost(() => api.get("/v1/trending/hot/members/a"));
    expect(member.requests).toBe(1);
  });
});
