/**
 * The histogram rows of the cost table (test/costs/histograms.ts), each measured
 * in the state it names with the local Upstash server's counters and asserted
 * exactly. Every script is called once before it is measured (EVALSHA hits).
 */
import { afterAll, describe, expect, it } from "vitest";
import { area } from "../costs/histograms.ts";
import { costOf, expected } from "../costs/types.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "costs-hist", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());

const H = "/v1/histograms";
const admin = { key: "admin" } as const;
const rows = area.rows;
type RowId = keyof typeof rows;

async function check(id: RowId, call: () => Promise<{ status: number }>, status = 200) {
  const measured = await api.cost(call);
  expect(measured.result.status, id).toBe(status);
  expect.soft(costOf(measured), id).toEqual(expected(rows[id]));
}

const batch = { values: Array.from({ length: 1000 }, (_, i) => i % 100) };

describe("histogram costs", () => {
  it("PUT: new, same settings, new retention", async () => {
    await api.put(`${H}/warm`, { bucketWidth: 1 }, admin);
    await check("putNew", () => api.put(`${H}/c-put`, { bucketWidth: 1, unit: "ms" }, admin), 201);
    await check("putSame", () => api.put(`${H}/c-put`, { bucketWidth: 1, unit: "ms" }, admin));
    await api.post(`${H}/c-put/observations`, { value: 1 });
    await check("putRetention", () => api.put(`${H}/c-put`, { bucketWidth: 1, unit: "ms", retentionDays: 30 }, admin));
  });

  it("observe: first of the day, new extreme, steady, new bucket, past day, Idempotency-Key, refused", async () => {
    await api.post(`${H}/warm/observations`, { value: 1 });
    await api.put(`${H}/c-obs`, { bucketWidth: 1 }, admin);
    await check("observeFirstOfDay", () => api.post(`${H}/c-obs/observations`, { value: 42 }));
    await check("observeNewExtreme", () => api.post(`${H}/c-obs/observations`, { value: 42.5 }));
    // the day's extremes are now 10 and 90
    await api.post(`${H}/c-obs/observations`, { values: [10, 90] });
    await check("observeSteady", () => api.post(`${H}/c-obs/observations`, { value: 42.25 }));
    await check("observeNewBucket", () => api.post(`${H}/c-obs/observations`, { value: 77 }));
    const yesterday = "2026-11-21T06:00:00Z";
    await api.post(`${H}/c-obs/observations`, { value: 42, at: yesterday });
    await check("observePastDay", () => api.post(`${H}/c-obs/observations`, { value: 42, at: yesterday }));
    const headers = { "idempotency-key": "cost-1" };
    await check("observeIdempotent", () => api.post(`${H}/c-obs/observations`, { value: 42 }, { headers }));
    await check("observeReplay", () => api.post(`${H}/c-obs/observations`, { value: 42 }, { headers }));
    await check("observeRefused", () => api.post(`${H}/never/observations`, { value: 1 }), 404);
  });

  it("observe: the first of a day later than any the histogram holds (its listing deadline rises)", async () => {
    await api.put(`${H}/c-later`, { bucketWidth: 1 }, admin);
    await api.post(`${H}/c-later/observations`, { value: 1 });
    const start = api.now;
    try {
      api.advance(86_400_000);
      await check("observeFirstOfLaterDay", () => api.post(`${H}/c-later/observations`, { value: 42 }));
    } finally {
      api.setNow(start);
    }
  });

  it("observe: 1,000 values, first of the day and steady", async () => {
    await api.put(`${H}/c-batch`, { bucketWidth: 1 }, admin);
    await check("observeBatchFirst", () => api.post(`${H}/c-batch/observations`, batch));
    await check("observeBatchSteady", () => api.post(`${H}/c-batch/observations`, batch));
  });

  it("read: 1, 30 and 400 days, ending today and in the past; a range older than any retention", async () => {
    await api.put(`${H}/c-read`, { bucketWidth: 1 }, admin);
    for (const day of ["2026-11-22", "2026-11-01", "2025-11-01"]) {
      await api.post(`${H}/c-read/observations`, {
        values: batch.values.slice(0, 50).map((value) => ({ value, at: `${day}T06:00:00Z` })),
      });
    }
    await api.get(`${H}/c-read`);
    await check("read1", () => api.get(`${H}/c-read?from=2026-11-22&to=2026-11-22`));
    await check("read30", () => api.get(`${H}/c-read?from=2026-10-24&to=2026-11-22`));
    await check("read30Past", () => api.get(`${H}/c-read?from=2026-10-15&to=2026-11-13`));
    await check("read400", () => api.get(`${H}/c-read?from=2025-10-19&to=2026-11-22`));
    await check("read400Past", () => api.get(`${H}/c-read?from=2025-10-12&to=2026-11-15`));
    await check("read400Edges", () => api.get(`${H}/c-read?from=2025-11-02&to=2026-10-30`));
    await check("readOld", () => api.get(`${H}/c-read?from=1000-01-01&to=1001-02-04`));
  });

  it("list and DELETE", async () => {
    await api.get(H);
    await check("list", () => api.get(H));
    await api.put(`${H}/c-del`, { bucketWidth: 1 }, admin);
    await api.post(`${H}/c-del/observations`, { value: 1 });
    await api.del(`${H}/warm`, admin);
    await check("delete", () => api.del(`${H}/c-del`, admin), 204);
  });
});
