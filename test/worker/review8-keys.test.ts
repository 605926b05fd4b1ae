/**
 * Adversarial review (round 8) of key hygiene through the Worker: a mixed workload on every
 * feature over HTTP (writes, reads, refusals, jobs, the dashboard and OpenAPI pages), then the
 * test prefix's keyspace is scanned and held against the docs' key tables: nothing the app writes
 * outside them, and every DELETE takes its keys with it. The library-level checks are in
 * test/redis/review8-keys.test.ts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "review8-keys", vars: { RATE_LIMIT_PER_10S: "1000" } });
afterAll(() => api.cleanup());
const admin = { key: "admin" };
const HOUR = 3_600_000;

/** Every key the docs list (docs/*.md key tables, README's shared keys), relative to the prefix. */
const DOCUMENTED = [
  /^idem:[0-9a-f]{64}$/,
  /^ratelimit:[0-9a-f]{12}:\d+$/,
  /^trending:_(names|seen|dirty)$/,
  /^trending:[^:]+:h:\d{10}$/,
  /^trending:[^:]+:u:(24|48|x):\d{10}$/,
  /^counters:_(names|expiry|seq|purge)$/,
  /^counters:[^:]+$/,
  /^counters:[^:]+:(hour|day|week|month):[0-9W-]+$/,
  /^counters:[^:]+:hour:by-quarter:\d{8}T\d{2}$/,
  /^counters:[^:]+:(hour|day):by-(day|month):\d{6,8}$/,
  /^counters:[^:]+:(index|union:[0-3])$/,
  /^hist:_(names|recent)$/,
  /^hist:[^:]+$/,
  /^hist:[^:]+:\d{6}(\d{2}(:ext)?)?$/,
  /^presence:_(rooms|due)$/,
  /^presence:[^:]+:(seen|ids|seq|history|days)$/,
  /^presence:([^:]+:daily|_au|_total):\d{8}$/,
  /^lb:_(boards|snap)$/,
  /^lb:[^:_][^:]*:(settings|ranking|players|profiles|snap)$/,
  /^lb:[^:_][^:]*:ranking:\d{4}-(\d{2}-\d{2}|W\d{2}|\d{2})$/,
  /^webhooks:_(hooks|pending|deliveries|recent)$/,
  /^webhooks:[^:_][^:]*:(log|marks)$/,
  /^ingest:(applied:\d{8}|stats:\d{10})$/,
];

async function scan(): Promise<{ key: string; pttl: number }[]> {
  const out = [];
  for (const full of await api.keys()) {
    const pttl = await command<number>(api.target, "PTTL", full);
    if (pttl !== -2) out.push({ key: full.slice(api.prefix.length + 1), pttl });
  }
  return out;
}

async function ok(p: Promise<{ status: number; body: unknown }>) {
  const r = await p;
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r;
}

describe("key hygiene through the Worker", () => {
  it("a mixed workload on every feature, refusals and jobs included, writes only documented keys", async () => {
    const idem = (k: string) => ({ headers: { "idempotency-key": k } });
    for (let h = 0; h < 3; h++) {
      await ok(api.post("/v1/trending/s/events", { events: [{ member: "a" }, { member: `m${h}` }] }));
      await ok(api.post("/v1/counters/c/incr", { items: [{ member: "a", by: 2, period: "hour", ttl: 7200 }] }));
      await ok(api.post("/v1/presence/r/heartbeats", { ids: ["x", `y${h}`] }));
      api.advance(HOUR);
    }
    await ok(api.post("/v1/counters/c/incr", { items: [{ member: "b" }] }, idem("k1")));
    await ok(
      api.post(
        "/v1/counters/roll/union",
        {
          sources: [{ counter: "c", period: "hour", from: api.now - 3 * HOUR, to: api.now }],
          ttl: 600,
        },
        admin,
      ),
    );
    await ok(api.put("/v1/histograms/h", { bucketWidth: 10, retentionDays: 7 }, admin));
    await ok(api.post("/v1/histograms/h/observations", { values: [5, 50, 70] }));
    await ok(api.put("/v1/leaderboards/b", { reset: "weekly", keepSeasons: 2 }, admin));
    await ok(api.put("/v1/leaderboards/b/players/p", { name: "P" }));
    await ok(api.post("/v1/leaderboards/b/players/p/score", { by: 5 }));
    await ok(api.put("/v1/leaderboards/plain/players/q", { name: "Q", score: 3 }));
    await ok(
      api.put(
        "/v1/webhooks/w",
        { url: "https://hooks.example.com/in", events: ["leaderboard.leader"], secret: "s".repeat(16) },
        admin,
      ),
    );
    // reads
    for (const path of [
      "/v1/trending/s/top?n=5&window=24h",
      "/v1/trending/s/top?n=5&window=2h",
      "/v1/trending/s/rising?n=5&baseline=24h",
      "/v1/trending/s/history?member=a&hours=48",
      "/v1/trending/s/members/a?window=24h",
      "/v1/counters/c/top?n=5&period=hour&from=" + (api.now - 3 * HOUR) + "&to=" + (api.now - HOUR),
      "/v1/counters/c/top?n=5&period=hour&from=" + (api.now - 3 * HOUR),
      "/v1/counters/c/members/a?period=hour&from=" + (api.now - 3 * HOUR),
      "/v1/counters/c/sorted?by=member",
      "/v1/counters/c/range?min=0&max=%2Binf",
      "/v1/counters",
      "/v1/histograms/h?from=2026-11-16&to=2026-11-22",
      "/v1/presence/r",
      "/v1/presence/r/history?hours=24",
      "/v1/presence/r/members?limit=10",
      "/v1/presence/_total",
      "/v1/presence",
      "/v1/leaderboards/b?page=1&limit=10",
      "/v1/leaderboards/b/players/p/around?k=2",
      "/v1/leaderboards/b/seasons",
      "/v1/leaderboards",
    ]) {
      const r = await api.get(path);
      expect(r.status, path).toBe(200);
    }
    await ok(api.get("/v1/ingest/status", admin));
    await api.get("/v1/webhooks", admin);
    await api.get("/v1/webhooks/w/deliveries", admin);
    await api.get("/");
    await api.get("/openapi.json");
    // refusals
    await api.post("/v1/counters/c/incr", { items: [{ member: "a", by: "x" }] }, idem("bad"));
    await api.post("/v1/leaderboards/b/players/nobody/score", { by: 1 }, idem("nf"));
    await api.post("/v1/histograms/none/observations", { values: [1] });
    await api.del("/v1/trending/s", { key: "read" });
    // jobs
    for (const job of ["compact", "sweep-counters", "trim", "leaderboards.snapshot", "webhooks", "webhooks.trending"])
      await ok(api.post(`/internal/jobs/${job}`, undefined, admin));
    const keys = await scan();
    expect(keys.filter((k) => !DOCUMENTED.some((p) => p.test(k.key))).map((k) => k.key)).toEqual([]);
    expect(keys.filter((k) => /tmp/.test(k.key))).toEqual([]);
    // the refused Idempotency-Keys left no record: only k1's
    expect(keys.filter((k) => k.key.startsWith("idem:"))).toHaveLength(1);
  });

  it("every DELETE over HTTP removes its keys and registry entries", async () => {
    await ok(api.post("/v1/counters/c/incr", { items: [{ member: "z", period: "day" }] }));
    for (const path of [
      "/v1/trending/s",
      "/v1/counters/c",
      "/v1/counters/roll",
      "/v1/histograms/h",
      "/v1/presence/r",
      "/v1/leaderboards/b",
      "/v1/leaderboards/plain",
      "/v1/webhooks/w",
    ])
      await ok(api.del(path, admin));
    await ok(api.post("/internal/jobs/sweep-counters", undefined, admin));
    const keys = (await scan()).map((k) => k.key);
    const owned = /^(trending:s|counters:(c|roll)|hist:h|presence:r|lb:(b|plain)|webhooks:w)(:|$)/;
    expect(keys.filter((k) => owned.test(k))).toEqual([]);
    for (const [reg, name] of [
      ["trending:_names", "s"],
      ["trending:_seen", "s"],
      ["trending:_dirty", "s"],
      ["counters:_names", "c"],
      ["counters:_expiry", "c"],
      ["counters:_names", "roll"],
      ["hist:_names", "h"],
      ["presence:_rooms", "r"],
      ["presence:_due", "r"],
      ["lb:_boards", "b"],
      ["lb:_boards", "plain"],
    ] as const)
      expect(await command(api.target, "ZSCORE", `${api.prefix}:${reg}`, name), reg).toBeNull();
    expect(await command(api.target, "HEXISTS", `${api.prefix}:webhooks:_hooks`, "w")).toBe(0);
  });
});
