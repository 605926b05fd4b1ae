/**
 * Review 18: histogram observations over HTTP at the JSON edges: numbers JSON.parse turns into
 * ±Infinity (1e309) refused with 400 naming the item and nothing written, strings "NaN"/"Infinity"
 * refused, -0 kept as 0 (one bucket, min/max 0), `Prefer: respond-async` (which API.md offers only
 * for trending, counters and presence) answered synchronously, and an Idempotency-Key replay.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "rv18-hist", start: Date.UTC(2026, 10, 28, 9, 40) });
afterAll(() => api.cleanup());
const path = "/v1/histograms/h";
const raw = (text: string, headers: Record<string, string> = {}) =>
  api.post(`${path}/observations`, undefined, {
    raw: text,
    headers: { "content-type": "application/json", ...headers },
  });

describe("review 18: histogram observations at the JSON edges", () => {
  it("1e309, -1e309 and strings are 400 naming the item; nothing written", async () => {
    expect((await api.put(path, { bucketWidth: 1 }, { key: "admin" })).status).toBe(201);
    const keys = (await api.keys()).sort();
    for (const body of [
      '{"value":1e309}',
      '{"values":[1,2,-1e309]}',
      '{"value":"NaN"}',
      '{"values":[1,{"value":"Infinity"}]}',
      '{"value":null}',
    ]) {
      const res = await raw(body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.error.code).toBe("invalid_request");
    }
    expect((await api.keys()).sort()).toEqual(keys);
  });

  it("-0 is 0: one bucket [0, 1), min and max 0", async () => {
    expect((await raw('{"values":[-0, 0, -0.0]}')).status).toBe(200);
    const got = (await api.get(path)).body;
    expect(got.count).toBe(3);
    expect(got.buckets).toEqual([{ lower: 0, upper: 1, count: 3 }]);
    expect([got.min, got.max, got.sum]).toEqual([0, 0, 0]);
  });

  it("Prefer: respond-async is not offered for histograms: 200, applied now; an Idempotency-Key replays", async () => {
    const headers = { prefer: "respond-async", "idempotency-key": "rv18-h-1" };
    const first = await raw('{"values":[5,6]}', headers);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ accepted: 2 });
    const again = await raw('{"values":[5,6]}', headers);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get(path)).body.count).toBe(5);
  });
});
