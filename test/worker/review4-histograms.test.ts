/**
 * Adversarial review 4, histograms through the Worker: `Prefer: respond-async` is not a queued
 * path for histograms (API.md lists trending, counters and presence only), so an observation with
 * it must be written at once (200, no `Preference-Applied`, nothing queued) and read back exactly;
 * one HTTP batch over several days, with values on 00:00:00.000 and 23:59:59.999 of its days,
 * reads as the raw observations do over ranges that cut months at both edges.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<IngestApi>();
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe("review 4: histograms over HTTP", () => {
  it("Prefer: respond-async on observations is answered synchronously and nothing is queued", async () => {
    const api = track(createIngestApi({ label: "r4h-async", start: Date.UTC(2027, 5, 10, 12) }));
    expect((await api.put("/v1/histograms/h", { bucketWidth: 1 }, { key: "admin" })).status).toBe(201);
    const res = await api.post("/v1/histograms/h/observations", { values: [1, 2, 3] }, { headers: api.asyncHeaders });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 3 });
    expect(res.headers.get("preference-applied")).toBeNull();
    expect(api.queue.sent).toEqual([]);
    const read = await api.get("/v1/histograms/h");
    expect([read.body.count, read.body.sum]).toEqual([3, 6]);
  });

  it("a seeded batch over 70 days with values at both ends of their days reads as the model over many ranges", async () => {
    const now = Date.UTC(2027, 5, 10, 12);
    const api = track(createIngestApi({ label: "r4h-http", start: now }));
    expect((await api.put("/v1/histograms/m", { bucketWidth: 0.5, retentionDays: 90 }, { key: "admin" })).status).toBe(
      201,
    );
    const rnd = mulberry32(44);
    const today = Date.UTC(2027, 5, 10);
    const obs: { value: number; at: number }[] = [];
    for (let i = 0; i < 1000; i++) {
      const day = today - Math.floor(rnd() * 70) * DAY;
      const at = rnd() < 0.3 ? day : rnd() < 0.5 ? day + DAY - 1 : day + Math.floor(rnd() * DAY);
      obs.push({ value: Math.round((rnd() - 0.3) * 4000) / 4, at: Math.min(at, now) });
    }
    const res = await api.post("/v1/histograms/m/observations", {
      values: obs.map((o) => ({ value: o.value, at: new Date(o.at).toISOString() })),
    });
    expect(res.status).toBe(200);
    const ranges: [number, number][] = [
      [today, today],
      [Date.UTC(2027, 3, 1), today],
      [Date.UTC(2027, 4, 1), Date.UTC(2027, 4, 31)],
      [Date.UTC(2027, 3, 17), Date.UTC(2027, 4, 9)],
      [Date.UTC(2027, 3, 2), Date.UTC(2027, 5, 3)],
      [today - 399 * DAY, today],
    ];
    for (const [from, to] of ranges) {
      const values = obs.filter((o) => o.at >= from && o.at < to + DAY).map((o) => o.value);
      const r = await api.get(`/v1/histograms/m?from=${iso(from)}&to=${iso(to)}`);
      expect(r.status).toBe(200);
      expect([r.body.count, r.body.sum, r.body.min, r.body.max], `${iso(from)}..${iso(to)}`).toEqual([
        values.length,
        values.reduce((a, b) => a + b, 0),
        values.length ? Math.min(...values) : null,
        values.length ? Math.max(...values) : null,
      ]);
      const counts = new Map<number, number>();
      for (const v of values) counts.set(Math.floor(v * 2), (counts.get(Math.floor(v * 2)) ?? 0) + 1);
      expect(r.body.buckets).toEqual(
        [...counts].sort((a, b) => a[0] - b[0]).map(([i, count]) => ({ lower: i / 2, upper: (i + 1) / 2, count })),
      );
    }
  });
});
