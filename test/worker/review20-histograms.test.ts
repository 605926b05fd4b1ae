/**
 * Review 20: histograms over HTTP at their edges: values exactly on bucket bounds (negative ones
 * too) and at ±1e15, percentiles of an empty histogram, of a single value and of ties against the
 * nearest-rank computation, the read range at its documented 400 days and one past (refused before
 * anything but the settings is read), the query's `from`/`to`/`top` at and past their limits, the
 * settings' limits, and the list's CSV (RFC 4180, header row).
 */
import { afterAll, describe, expect, it } from "vitest";
import { exactQuantile } from "../../src/histograms/buckets.ts";
import { createTestApi } from "../helpers/worker.ts";

const NOW = Date.UTC(2026, 10, 28, 15, 0);
const api = createTestApi({ label: "rv20-hist", start: NOW });
afterAll(() => api.cleanup());
const day = (back: number) => new Date(NOW - back * 86_400_000).toISOString().slice(0, 10);
const put = (name: string, body: unknown) => api.put(`/v1/histograms/${name}`, body, { key: "admin" });
const observe = (name: string, values: unknown[]) => api.post(`/v1/histograms/${name}/observations`, { values });

describe("review 20: histogram buckets and percentiles over HTTP", () => {
  it("values on bounds go to the bucket they start: [-10,0), [0,10), [10,20); ±1e15 kept exactly", async () => {
    expect((await put("edges", { bucketWidth: 10 })).status).toBe(201);
    expect((await observe("edges", [-10, -0.5, 0, 9.999, 10, 20, -20])).status).toBe(200);
    const got = (await api.get("/v1/histograms/edges")).body;
    expect(got.buckets).toEqual([
      { lower: -20, upper: -10, count: 1 },
      { lower: -10, upper: 0, count: 2 },
      { lower: 0, upper: 10, count: 2 },
      { lower: 10, upper: 20, count: 1 },
      { lower: 20, upper: 30, count: 1 },
    ]);
    expect([got.min, got.max, got.count, got.sum]).toEqual([-20, 20, 7, -20 - 10 - 0.5 + 9.999 + 10 + 20]);

    expect((await put("wide", { bucketWidth: 1e12 })).status).toBe(201);
    expect((await observe("wide", [1e15, -1e15])).status).toBe(200);
    const wide = (await api.get("/v1/histograms/wide")).body;
    expect([wide.min, wide.max, wide.sum]).toEqual([-1e15, 1e15, 0]);
    expect(wide.buckets).toEqual([
      { lower: -1e15, upper: -1e15 + 1e12, count: 1 },
      { lower: 1e15, upper: 1e15 + 1e12, count: 1 },
    ]);
  });

  it("empty: count 0, sum 0, min/max/mean/percentiles null, no buckets", async () => {
    expect((await put("empty", { bucketWidth: 1 })).status).toBe(201);
    const got = (await api.get("/v1/histograms/empty")).body;
    expect(got).toMatchObject({ count: 0, sum: 0, min: null, max: null, mean: null, p50: null, p90: null, p99: null });
    expect(got.buckets).toEqual([]);
    expect(got.top).toEqual([]);
  });

  it("one value, and ties: every percentile is that value (p0 and p100 are the min and max)", async () => {
    expect((await put("single", { bucketWidth: 5 })).status).toBe(201);
    expect((await observe("single", [7.25])).status).toBe(200);
    const one = (await api.get("/v1/histograms/single")).body;
    expect([one.p50, one.p90, one.p99, one.min, one.max, one.mean]).toEqual([7.25, 7.25, 7.25, 7.25, 7.25, 7.25]);

    expect((await put("ties", { bucketWidth: 5 })).status).toBe(201);
    expect((await observe("ties", Array(300).fill(-3))).status).toBe(200);
    const ties = (await api.get("/v1/histograms/ties")).body;
    expect([ties.p50, ties.p90, ties.p99]).toEqual([-3, -3, -3]);
    expect(ties.buckets).toEqual([{ lower: -5, upper: 0, count: 300 }]);
  });

  it("percentiles within one bucketWidth of the nearest-rank value, in the same bucket", async () => {
    expect((await put("pct", { bucketWidth: 3 })).status).toBe(201);
    // 1..100 and a heavy tail, and a tie at a bound where the 50th and 51st values meet
    const values = [...Array(100).keys()].map((i) => i + 1).concat([300, 300, 300, 600, -9]);
    expect((await observe("pct", values)).status).toBe(200);
    const got = (await api.get("/v1/histograms/pct")).body;
    for (const [q, p] of [
      [0.5, got.p50],
      [0.9, got.p90],
      [0.99, got.p99],
    ] as const) {
      const exact = exactQuantile(values, q)!;
      expect(Math.floor(p / 3), `p${q * 100}`).toBe(Math.floor(exact / 3));
      expect(Math.abs(p - exact)).toBeLessThan(3);
    }
    expect(got.min).toBe(-9);
    expect(got.max).toBe(600);
  });
});

describe("review 20: histogram read ranges and queries", () => {
  it("400 days is read; 401 is a 400 naming the limit", async () => {
    expect((await put("range", { bucketWidth: 1 })).status).toBe(201);
    expect((await observe("range", [1])).status).toBe(200);
    const ok = await api.get(`/v1/histograms/range?from=${day(399)}&to=${day(0)}`);
    expect(ok.status).toBe(200);
    expect(ok.body.count).toBe(1);
    const past = await api.get(`/v1/histograms/range?from=${day(400)}&to=${day(0)}`);
    expect(past.status).toBe(400);
    expect(past.body.error.code).toBe("invalid_request");
    expect(JSON.stringify(past.body)).toContain("400 days");
  });

  it("a 401-day range is refused before any Redis command (sizes checked first)", async () => {
    const { result, requests } = await api.cost(() => api.get(`/v1/histograms/range?from=${day(400)}&to=${day(0)}`));
    expect(result.status).toBe(400);
    expect(requests).toBe(0);
  });

  it("bad dates and order: 400 envelopes", async () => {
    for (const q of [
      `from=${day(0)}&to=${day(1)}`,
      "from=2026-02-30&to=2026-03-01",
      "to=2026-13-01",
      "from=26-11-01",
      "to=2026-11-28T00:00:00Z",
    ]) {
      const res = await api.get(`/v1/histograms/range?${q}`);
      expect({ q, status: res.status, code: res.body?.error?.code }).toEqual({
        q,
        status: 400,
        code: "invalid_request",
      });
    }
  });

  it("top: 0 and 100 allowed; -1, 101, 1.5, 'x' refused", async () => {
    expect((await api.get("/v1/histograms/range?top=0")).body.top).toEqual([]);
    expect((await api.get("/v1/histograms/range?top=100")).status).toBe(200);
    for (const top of ["-1", "101", "1.5", "x"]) {
      const res = await api.get(`/v1/histograms/range?top=${top}`);
      expect({ top, status: res.status }).toEqual({ top, status: 400 });
      expect(res.body.error.code).toBe("invalid_request");
    }
  });

  it("settings at and past their limits: 400 envelope, nothing written", async () => {
    const keys = (await api.keys()).sort();
    for (const body of [
      { bucketWidth: 0 },
      { bucketWidth: -1 },
      { bucketWidth: 1e15 * 1.5 },
      { bucketWidth: "1" },
      { bucketWidth: 1, retentionDays: 0 },
      { bucketWidth: 1, retentionDays: 401 },
      { bucketWidth: 1, retentionDays: 1.5 },
      { bucketWidth: 1, unit: "" },
      { bucketWidth: 1, unit: "x".repeat(33) },
      { bucketWidth: 1, extra: true },
    ]) {
      const res = await put("limits", body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.error.code).toBe("invalid_request");
    }
    expect((await api.keys()).sort()).toEqual(keys);
    expect((await put("limits", { bucketWidth: 1e15, retentionDays: 400, unit: "x".repeat(32) })).status).toBe(201);
  });

  it("a read key cannot PUT or observe; an ingest key cannot PUT or DELETE", async () => {
    expect((await api.put("/v1/histograms/scoped", { bucketWidth: 1 }, { key: "read" })).status).toBe(403);
    expect((await api.put("/v1/histograms/scoped", { bucketWidth: 1 }, { key: "ingest" })).status).toBe(403);
    expect((await api.post("/v1/histograms/range/observations", { value: 1 }, { key: "read" })).status).toBe(403);
    expect((await api.del("/v1/histograms/range", { key: "ingest" })).status).toBe(403);
    expect((await api.get("/v1/histograms/range")).body.count).toBe(1);
  });

  it("the list as CSV: RFC 4180 with a header row", async () => {
    const res = await api.get("/v1/histograms", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    const lines = String(res.body).split("\r\n");
    expect(lines[0]).toMatch(/histogram/);
    expect(lines.slice(1).filter(Boolean).sort()).toEqual(
      ["edges", "empty", "wide", "single", "ties", "pct", "range", "limits"].sort(),
    );
  });

  it("the list pages: limit 1..1000, offset ≥ 0; next null on the last page", async () => {
    const all = (await api.get("/v1/histograms")).body;
    expect(all.total).toBe(8);
    expect(all.next).toBeNull();
    const first = (await api.get("/v1/histograms?limit=3")).body;
    expect(first.histograms).toEqual(all.histograms.slice(0, 3));
    expect(first.next).toBe(3);
    const last = (await api.get("/v1/histograms?limit=3&offset=6")).body;
    expect(last.histograms).toEqual(all.histograms.slice(6));
    expect(last.next).toBeNull();
    for (const q of ["limit=0", "limit=1001", "offset=-1", "limit=x"]) {
      const res = await api.get(`/v1/histograms?${q}`);
      expect({ q, status: res.status }).toEqual({ q, status: 400 });
    }
  });

  it("empty from= and to= mean today; only to= in the past reads that one day", async () => {
    const today = await api.get("/v1/histograms/range?from=&to=");
    expect(today.status).toBe(200);
    expect([today.body.from, today.body.to, today.body.count]).toEqual([day(0), day(0), 1]);
    const past = await api.get(`/v1/histograms/range?to=${day(3)}`);
    expect([past.body.from, past.body.to, past.body.count]).toEqual([day(3), day(3), 0]);
  });

  it("the read as CSV answers its buckets with a header row", async () => {
    const res = await api.get("/v1/histograms/edges", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    const lines = String(res.body).trim().split("\r\n");
    expect(lines[0]).toBe("lower,upper,count");
    expect(lines.slice(1)).toEqual(["-20,-10,1", "-10,0,2", "0,10,2", "10,20,1", "20,30,1"]);
  });
});
