/**
 * Adversarial review (round 5) of the v2 signals over HTTP inside workerd, on a fake clock:
 * `GET /v1/trending/{stream}/rising` and `/history` against answers computed by hand from what
 * was written (docs/trending.md "Rising and history"), their CSV, and `leaderboard.leader` from
 * score routes (an Idempotency-Key replay queues nothing again). The queued events are read from
 * the webhooks' deliveries hash (the receiver here is the local Upstash server, which refuses).
 */
import { afterAll, describe, expect, it } from "vitest";
import { registryKeys } from "../../src/webhooks/keys.ts";
import { parseCsv } from "../helpers/csv.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const MINUTE = 60_000;
const H = Date.UTC(2026, 10, 22, 12);
const admin = { key: "admin" };
const SECRET = "review5-worker-secret-0123";

/** UTF-8 byte order, as the docs rank ties. */
const bytes = (a: string, b: string) => {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
};

describe("rising and history over HTTP against a hand model", () => {
  const now = H + 45 * MINUTE; // three quarters of the hour elapsed
  const api = createTestApi({ label: "rv5-rising", start: now });
  afterAll(() => api.cleanup());

  /** member → [count in hour H−3, H−2, H−1, H (so far)] */
  const written: Record<string, number[]> = {
    steady: [4, 4, 4, 3],
    surge: [1, 0, 2, 30],
    fresh: [0, 0, 0, 5],
    fading: [9, 9, 9, 1],
    été: [0, 0, 0, 5], // ties "fresh" on score: byte order puts "fresh" first
    older: [7, 0, 0, 0],
  };

  it("answers what the documented statistic gives, ordered by score then member, at most n", async () => {
    const events = Object.entries(written).flatMap(([member, counts]) =>
      counts.flatMap((count, i) => (count > 0 ? [{ member, count, at: H - (3 - i) * HOUR + i * MINUTE }] : [])),
    );
    expect((await api.post("/v1/trending/s/events", { events })).status).toBe(200);
    const elapsed = 45 / 60;
    for (const [b, n] of [
      [3, 10],
      [2, 2],
      [1, 100],
    ] as const) {
      const res = await api.get(`/v1/trending/s/rising?n=${n}&baseline=${b}h`);
      expect(res.status).toBe(200);
      const want = Object.entries(written)
        .filter(([, c]) => c[3]! > 0)
        .map(([member, c]) => {
          const sum = c.slice(3 - b, 3).reduce((x, y) => x + y, 0);
          const baseline = (sum * elapsed) / b;
          const count = c[3]!;
          return {
            member,
            count,
            baseline,
            ratio: baseline > 0 ? count / baseline : null,
            score: (count - baseline) / Math.sqrt(baseline + 1),
          };
        })
        .filter((x) => x.score > 0)
        .sort((x, y) => y.score - x.score || bytes(x.member, y.member))
        .slice(0, n);
      expect(
        res.body.items.map((x: { member: string }) => x.member),
        `baseline ${b}h`,
      ).toEqual(want.map((x) => x.member));
      res.body.items.forEach((x: (typeof want)[number], i: number) => {
        expect(x.count).toBe(want[i]!.count);
        expect(x.baseline).toBeCloseTo(want[i]!.baseline, 12);
        if (want[i]!.ratio === null) expect(x.ratio).toBeNull();
        else expect(x.ratio).toBeCloseTo(want[i]!.ratio!, 12);
        expect(x.score).toBeCloseTo(want[i]!.score, 12);
      });
      expect(res.body).toMatchObject({
        stream: "s",
        baselineHours: b,
        elapsed,
        candidates: 5,
        exact: true,
        maxError: 0,
        generatedAt: now,
      });
    }
  });

  it("history: one point per hour, oldest first, a never-seen member all zeros, exact", async () => {
    const res = await api.get("/v1/trending/s/history?member=surge&hours=3");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      stream: "s",
      member: "surge",
      hours: 3,
      points: written.surge!.map((count, i) => ({ hour: H - (3 - i) * HOUR, count, maxError: 0 })),
      exact: true,
      generatedAt: now,
    });
    const ghost = await api.get("/v1/trending/s/history?member=ghost&hours=1");
    expect(ghost.body.points).toEqual([
      { hour: H - HOUR, count: 0, maxError: 0 },
      { hour: H, count: 0, maxError: 0 },
    ]);
    // the default: 48 finished hours (the retention, 50, is longer), then the current one
    const dflt = await api.get("/v1/trending/s/history?member=older");
    expect(dflt.body.points).toHaveLength(49);
    expect(dflt.body.points[0].hour).toBe(H - 48 * HOUR);
    expect(dflt.body.points.filter((p: { count: number }) => p.count > 0)).toEqual([
      { hour: H - 3 * HOUR, count: 7, maxError: 0 },
    ]);
  });

  it("CSV of rising and history: a header row and the JSON's rows, in order", async () => {
    const json = await api.get("/v1/trending/s/rising?n=3&baseline=3h");
    const rising = await api.get<string>("/v1/trending/s/rising?n=3&baseline=3h", { headers: { accept: "text/csv" } });
    expect(rising.status).toBe(200);
    const rows = parseCsv(rising.body);
    expect(rows[0]).toEqual(["member", "count", "baseline", "ratio", "score"]);
    expect(rows.slice(1).map((r) => r[0])).toEqual(json.body.items.map((x: { member: string }) => x.member));
    const history = await api.get<string>("/v1/trending/s/history?member=surge&hours=3", {
      headers: { accept: "text/csv" },
    });
    expect(parseCsv(history.body)).toEqual([
      ["hour", "count", "maxError"],
      ...written.surge!.map((count, i) => [String(H - (3 - i) * HOUR), String(count), "0"]),
    ]);
  });
});

describe("leaderboard.leader from the score routes", () => {
  const api = createTestApi({ label: "rv5-leader", vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } });
  afterAll(() => api.cleanup());
  const NOWHERE = `${api.env.UPSTASH_REDIS_REST_URL}/hook`;
  /** The queued events' bodies (type, data), from the deliveries hash. */
  async function queued() {
    const flat = await command<string[]>(api.target, "HGETALL", registryKeys(api.prefix).deliveries);
    const out: { id: string; type: string; data: Record<string, unknown> }[] = [];
    for (let i = 1; i < flat.length; i += 2) out.push(JSON.parse(JSON.parse(flat[i]!).body));
    return out;
  }

  it("an Idempotency-Key replay queues nothing again; only the watched board is told", async () => {
    expect(
      (
        await api.put(
          "/v1/webhooks/lead",
          { url: NOWHERE, events: ["leaderboard.leader"], filter: { board: "b" }, secret: SECRET },
          admin,
        )
      ).status,
    ).toBe(201);
    for (const board of ["b", "other"]) {
      for (const p of ["ann", "bob"])
        expect((await api.put(`/v1/leaderboards/${board}/players/${p}`, { name: p })).status).toBe(201);
      await api.post(`/v1/leaderboards/${board}/players/ann/score`, { by: 5 });
    }
    const headers = { "idempotency-key": "rv5-lead-1" };
    const first = await api.post("/v1/leaderboards/b/players/bob/score", { by: 10 }, { headers });
    expect(first.body).toEqual({ score: 10, rank: 1 });
    api.advance(1000);
    const replay = await api.post("/v1/leaderboards/b/players/bob/score", { by: 10 }, { headers });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ score: 10, rank: 1 });
    const events = await queued();
    expect(events.map((e) => e.data).sort((x, y) => String(x.player).localeCompare(String(y.player)))).toEqual([
      { board: "b", player: "ann", score: 5, previous: null, season: null },
      { board: "b", player: "bob", score: 10, previous: "ann", season: null },
    ]);
    expect(events.every((e) => e.type === "leaderboard.leader")).toBe(true);
    // the leader's score read back: its write was applied once
    expect((await api.get("/v1/leaderboards/b/players/bob")).body.score).toBe(10);
  });
});

describe("defaults under a retention shorter than them", () => {
  // FIXED (was low; rising, top and member lookup default to 24 h or the retention if shorter): with TRENDING_RETENTION_HOURS below 24 (the config allows 2..9600), a plain
  // `GET /v1/trending/{stream}/rising` is a 400 naming `baseline`, a parameter the caller never
  // sent: the default (24) is not capped as history's (min(48, retention)) is, while the
  // trending.rising detector already uses min(24, retention). Fix: default `baselineHours` to
  // min(24, horizonOf(retention)) in src/trending/signals.ts rising() (and let the route's schema
  // leave the default to it), and say so in docs/trending.md.
  it("a plain GET …/rising answers over the whole retention, as the detector reads it", async () => {
    const api = createTestApi({ label: "rv5-short", vars: { TRENDING_RETENTION_HOURS: "12" } });
    try {
      await api.post("/v1/trending/s/events", { member: "m", count: 3 });
      const history = await api.get("/v1/trending/s/history?member=m");
      expect(history.status).toBe(200);
      expect(history.body.hours).toBe(12);
      const rising = await api.get("/v1/trending/s/rising");
      expect(rising.status, JSON.stringify(rising.body)).toBe(200);
      expect(rising.body).toMatchObject({ baselineHours: 12, items: [{ member: "m", count: 3 }] });
      // so do a plain top read and member lookup (their window), while a window past the retention is a 400
      const top = await api.get("/v1/trending/s/top");
      expect([top.status, top.body.window?.hours, top.body.items]).toEqual([
        200,
        12,
        [{ rank: 1, member: "m", count: 3 }],
      ]);
      const one = await api.get("/v1/trending/s/members/m");
      expect([one.status, one.body.count, one.body.rank]).toEqual([200, 3, 1]);
      expect((await api.get("/v1/trending/s/top?window=24h")).status).toBe(400);
    } finally {
      await api.cleanup();
    }
  });
});
