/**
 * Review 16: trending's rising and history reads over HTTP against API.md and docs/trending.md:
 * an empty previous window (every candidate new: ratio null, score = count), ties broken by UTF-8
 * byte order (not UTF-16, where a surrogate pair sorts before U+FF5E), `n` cutting after the order,
 * history's points hour by hour for a member never seen and one written at hour edges, an
 * Idempotency-Key replay of events counted once in both reads, and their CSV.
 */
import { afterAll, describe, expect, it } from "vitest";
import { parseCsv } from "../helpers/csv.ts";
import { createTestApi } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const H0 = Date.UTC(2026, 11, 31, 23);
const T0 = H0 + 15 * 60_000;

describe("review 16: rising and history", () => {
  const api = createTestApi({ label: "rv16-trend", start: T0 });
  afterAll(() => api.cleanup());
  const events = (stream: string, list: unknown[], headers?: Record<string, string>) =>
    api.post(`/v1/trending/${stream}/events`, { events: list }, headers ? { headers } : {});

  it("an empty previous window: every candidate is new (baseline 0, ratio null, score = count), ties by UTF-8 byte order", async () => {
    const members = ["😀", "～", "b", "a", "é"];
    expect(
      (await events("fresh", [...members.map((member) => ({ member, count: 5 })), { member: "big", count: 9 }])).status,
    ).toBe(200);
    const res = await api.get("/v1/trending/fresh/rising?n=10&baseline=24h");
    expect(res.status).toBe(200);
    expect(res.body.candidates).toBe(6);
    expect(res.body.exact).toBe(true);
    // byte order: a (61) < b (62) < é (C3 A9) < ～ (EF BD 9E) < 😀 (F0 9F 98 80)
    expect(res.body.items).toEqual([
      { member: "big", count: 9, baseline: 0, ratio: null, score: 9 },
      ...["a", "b", "é", "～", "😀"].map((member) => ({ member, count: 5, baseline: 0, ratio: null, score: 5 })),
    ]);
    // n cuts after the order
    const two = await api.get("/v1/trending/fresh/rising?n=2&baseline=1h");
    expect(two.body.items.map((i: { member: string }) => i.member)).toEqual(["big", "a"]);
  });

  it("a member back after its baseline hours and one steady: the steady one is not rising, the returning one is scored against its own rate", async () => {
    // baseline 2h: hours H0-2h and H0-1h; 'steady' 8 an hour, 'back' only 3 hours ago (outside it)
    expect(
      (
        await events("mix", [
          { member: "steady", count: 8, at: H0 - 2 * HOUR },
          { member: "steady", count: 8, at: H0 - HOUR + 59 * 60_000 + 59_999 },
          { member: "back", count: 50, at: H0 - 3 * HOUR },
          { member: "steady", count: 2, at: H0 },
          { member: "back", count: 4, at: T0 },
        ])
      ).status,
    ).toBe(200);
    const res = await api.get("/v1/trending/mix/rising?baseline=2h");
    expect(res.status).toBe(200);
    expect(res.body.elapsed).toBe(0.25);
    // steady: baseline 16 × 0.25 / 2 = 2, count 2 → score 0, not listed; back: no count in its baseline hours
    expect(res.body.items).toEqual([{ member: "back", count: 4, baseline: 0, ratio: null, score: 4 }]);
    const wider = await api.get("/v1/trending/mix/rising?baseline=3h");
    // back: 50 × 0.25 / 3 = 4.1666…, above its 4: not rising; steady: 16 × 0.25 / 3 = 4/3 below its 2
    const b = (16 * 0.25) / 3;
    expect(wider.body.items).toEqual([
      { member: "steady", count: 2, baseline: b, ratio: 2 / b, score: (2 - b) / Math.sqrt(b + 1) },
    ]);
  });

  it("history: hours + 1 points, oldest first, each hour's start; a member never seen is all zeros and exact", async () => {
    const res = await api.get("/v1/trending/mix/history?member=nobody&hours=3");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ stream: "mix", member: "nobody", hours: 3, exact: true });
    expect(res.body.points).toEqual([3, 2, 1, 0].map((k) => ({ hour: H0 - k * HOUR, count: 0, maxError: 0 })));
    const steady = await api.get("/v1/trending/mix/history?member=steady&hours=3");
    expect(steady.body.points.map((p: { count: number }) => p.count)).toEqual([0, 8, 8, 2]);
    const back = await api.get(`/v1/trending/mix/history?member=${encodeURIComponent("back")}&hours=3`);
    expect(back.body.points.map((p: { count: number }) => p.count)).toEqual([50, 0, 0, 4]);
    // more hours than the retention (50 by default) is a 400
    expect((await api.get("/v1/trending/mix/history?member=steady&hours=51")).status).toBe(400);
    expect((await api.get("/v1/trending/mix/history?member=steady&hours=50")).body.points).toHaveLength(51);
  });

  it("an Idempotency-Key replay of events is counted once by rising and history", async () => {
    const headers = { "idempotency-key": "rv16-events" };
    const batch = [
      { member: "x", count: 3 },
      { member: "x", count: 2, at: H0 - HOUR },
    ];
    expect((await events("idem", batch, headers)).status).toBe(200);
    const again = await events("idem", batch, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const history = await api.get("/v1/trending/idem/history?member=x&hours=1");
    expect(history.body.points.map((p: { count: number }) => p.count)).toEqual([2, 3]);
    const rising = await api.get("/v1/trending/idem/rising?baseline=1h");
    // baseline 2 × 0.25 = 0.5; score (3 − 0.5) / √1.5
    expect(rising.body.items).toEqual([
      { member: "x", count: 3, baseline: 0.5, ratio: 6, score: 2.5 / Math.sqrt(1.5) },
    ]);
  });

  it("CSV of rising (a null ratio is an empty field) and of history", async () => {
    const rising = await api.get("/v1/trending/fresh/rising?n=2", { headers: { accept: "text/csv" } });
    expect(rising.status).toBe(200);
    expect(parseCsv(rising.body as string)).toEqual([
      ["member", "count", "baseline", "ratio", "score"],
      ["big", "9", "0", "", "9"],
      ["a", "5", "0", "", "5"],
    ]);
    const history = await api.get("/v1/trending/mix/history?member=steady&hours=1", {
      headers: { accept: "text/csv" },
    });
    expect(parseCsv(history.body as string)).toEqual([
      ["hour", "count", "maxError"],
      [String(H0 - HOUR), "8", "0"],
      [String(H0), "2", "0"],
    ]);
  });

  it("across the year's end: at 00:10 UTC the previous year's last hour is the baseline", async () => {
    api.setNow(H0 + HOUR + 10 * 60_000);
    expect(
      (
        await events("year", [
          { member: "y", count: 6, at: H0 + 30 * 60_000 },
          { member: "y", count: 7 },
        ])
      ).status,
    ).toBe(200);
    const res = await api.get("/v1/trending/year/rising?baseline=1h");
    // baseline 6 × (10 / 60) = 1; score (7 − 1) / √2
    expect(res.body.items).toEqual([{ member: "y", count: 7, baseline: 1, ratio: 7, score: 6 / Math.sqrt(2) }]);
    const history = await api.get("/v1/trending/year/history?member=y&hours=1");
    expect(history.body.points).toEqual([
      { hour: H0, count: 6, maxError: 0 },
      { hour: H0 + HOUR, count: 7, maxError: 0 },
    ]);
    api.setNow(T0);
  });
});
