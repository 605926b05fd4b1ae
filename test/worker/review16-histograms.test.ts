/**
 * Review 16: histograms over HTTP against API.md and docs/histograms.md: a batch with one bad item
 * (refused by the schema, or by the script for its bucket distance) writes nothing and keeps no
 * idempotency record, so its corrected retry under the same Idempotency-Key is applied once and then
 * replayed; scopes; the CSV of a read; a range across a year's end.
 */
import { afterAll, describe, expect, it } from "vitest";
import { parseCsv } from "../helpers/csv.ts";
import { createTestApi } from "../helpers/worker.ts";

const START = Date.UTC(2027, 0, 1, 0, 20);

describe("review 16: histograms over HTTP", () => {
  const api = createTestApi({ label: "rv16-hist", start: START });
  afterAll(() => api.cleanup());
  const path = "/v1/histograms/lat";

  it("creates the histogram (admin) and warms the scripts", async () => {
    expect((await api.put(path, { bucketWidth: 0.001, unit: "s", retentionDays: 30 }, { key: "admin" })).status).toBe(
      201,
    );
    expect((await api.post(path + "/observations", { value: 0.5, at: START - 30 * 60_000 })).status).toBe(200);
    expect((await api.get(`${path}?from=2026-12-31&to=2027-01-01`)).body.count).toBe(1);
  });

  it("one item the schema refuses: 400 naming it, no Redis round trip, nothing written", async () => {
    const keys = (await api.keys()).sort();
    const cost = await api.cost(() =>
      api.post(
        path + "/observations",
        { values: [1, { value: 2 }, { value: "3" }, 4] },
        {
          headers: { "idempotency-key": "rv16-a" },
        },
      ),
    );
    expect(cost.result.status).toBe(400);
    expect(JSON.stringify(cost.result.body.error.details)).toContain("values.2");
    expect(cost.requests).toBe(0);
    expect((await api.keys()).sort()).toEqual(keys);
  });

  it("one item the script refuses (too many buckets from zero): 400, nothing written, and the corrected retry under the same key counts once", async () => {
    const keys = (await api.keys()).sort();
    const before = (await api.get(`${path}?from=2026-12-31&to=2027-01-01`)).body;
    const headers = { "idempotency-key": "rv16-b" };
    // 1e10 / 0.001 = 1e13 buckets from zero: past the 1e12 the docs allow, though the value is within ±1e15
    const bad = await api.post(
      path + "/observations",
      { values: [0.25, { value: 0.75, at: START - 3_600_000 }, 1e10] },
      {
        headers,
      },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_request");
    expect((await api.keys()).sort()).toEqual(keys);
    expect((await api.get(`${path}?from=2026-12-31&to=2027-01-01`)).body).toEqual(before);

    const good = await api.post(
      path + "/observations",
      { values: [0.25, { value: 0.75, at: START - 3_600_000 }, 1e9] },
      {
        headers,
      },
    );
    expect(good.status).toBe(200);
    expect(good.body).toEqual({ accepted: 3 });
    expect(good.headers.get("idempotent-replayed")).toBeNull();
    const again = await api.post(
      path + "/observations",
      { values: [0.25, { value: 0.75, at: START - 3_600_000 }, 1e9] },
      {
        headers,
      },
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ accepted: 3 });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const other = await api.post(path + "/observations", { values: [0.25] }, { headers });
    expect(other.status).toBe(409);
    const after = (await api.get(`${path}?from=2026-12-31&to=2027-01-01`)).body;
    expect(after.count).toBe(before.count + 3);
    expect(after.sum).toBe(before.sum + 0.25 + 0.75 + 1e9);
    expect(after.max).toBe(1e9);
  });

  it("a range across the year's end: each day counts once, the days apart and together agree", async () => {
    const dec = (await api.get(`${path}?from=2026-12-31&to=2026-12-31`)).body;
    const jan = (await api.get(`${path}?from=2027-01-01&to=2027-01-01`)).body;
    const both = (await api.get(`${path}?from=2026-12-31&to=2027-01-01`)).body;
    expect([dec.count, jan.count]).toEqual([2, 2]);
    expect(both.count).toBe(dec.count + jan.count);
    expect(both.sum).toBe(dec.sum + jan.sum);
    expect(both.min).toBe(Math.min(dec.min, jan.min));
    expect(both.max).toBe(Math.max(dec.max, jan.max));
    expect(both.from).toBe("2026-12-31");
    expect(both.to).toBe("2027-01-01");
    // today is the default range
    expect((await api.get(path)).body.count).toBe(jan.count);
  });

  it("PUT under an Idempotency-Key: the replay answers the first 201; a width conflict (409) keeps no record", async () => {
    const headers = { "idempotency-key": "rv16-put" };
    const first = await api.put("/v1/histograms/made", { bucketWidth: 2 }, { key: "admin", headers });
    expect(first.status).toBe(201);
    const again = await api.put("/v1/histograms/made", { bucketWidth: 2 }, { key: "admin", headers });
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.post("/v1/histograms/made/observations", { value: 3 })).status).toBe(200);
    const conflictHeaders = { "idempotency-key": "rv16-put-2" };
    const conflict = await api.put(
      "/v1/histograms/made",
      { bucketWidth: 5 },
      { key: "admin", headers: conflictHeaders },
    );
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe("bucket_width_conflict");
    // no record: the corrected request under the same key is judged afresh (200 replaced, not a replay)
    const fixed = await api.put(
      "/v1/histograms/made",
      { bucketWidth: 2, unit: "ms" },
      {
        key: "admin",
        headers: conflictHeaders,
      },
    );
    expect(fixed.status).toBe(200);
    expect(fixed.headers.get("idempotent-replayed")).toBeNull();
    expect((await api.get("/v1/histograms/made")).body).toMatchObject({ unit: "ms", bucketWidth: 2, count: 1 });
  });

  it("scopes: an ingest key cannot read, nor PUT or DELETE; a read key cannot observe (403, nothing changed)", async () => {
    const keys = (await api.keys()).sort();
    expect((await api.get(path, { key: "ingest" })).status).toBe(403);
    expect((await api.put(path, { bucketWidth: 1 }, { key: "ingest" })).status).toBe(403);
    expect((await api.del(path, { key: "ingest" })).status).toBe(403);
    expect((await api.post(path + "/observations", { value: 1 }, { key: "read" })).status).toBe(403);
    expect((await api.keys()).sort()).toEqual(keys);
  });

  it("CSV of a read: a header row and the buckets as numbers (negative bounds are not prefixed)", async () => {
    expect((await api.post(path + "/observations", { values: [-0.0015, -0.0005, 0.0025] })).status).toBe(200);
    const json = (await api.get(path)).body;
    const res = await api.get(path, { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/csv");
    const rows = parseCsv(res.body as string);
    expect(rows[0]).toEqual(["lower", "upper", "count"]);
    expect(rows.slice(1)).toEqual(
      json.buckets.map((b: { lower: number; upper: number; count: number }) => [
        String(b.lower),
        String(b.upper),
        String(b.count),
      ]),
    );
    expect(rows[1]).toEqual(["-0.002", "-0.001", "1"]);
  });
});
