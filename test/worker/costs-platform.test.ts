/**
 * Cost rows of the platform (test/costs/platform.ts), each measured with the
 * local Upstash server's counters and asserted exactly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { area } from "../costs/platform.ts";
import { costOf, expected } from "../costs/types.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "costs-platform" });
const { rows } = area;
afterAll(() => api.cleanup());

let serial = 0;
const idem = () => ({ "idempotency-key": `cost-${Date.now()}-${++serial}` });

beforeAll(async () => {
  // Warm the script cache and create the counter and member: steady state.
  for (let i = 0; i < 2; i++) expect((await api.post("/v1/counters/cost/incr", { member: "m" })).status).toBe(200);
});

describe("platform costs", () => {
  it("Idempotency-Key: +2 commands on a first use, same round trip", async () => {
    const plain = await api.cost(() => api.post("/v1/counters/cost/incr", { member: "m" }));
    const keyed = await api.cost(() => api.post("/v1/counters/cost/incr", { member: "m" }, { headers: idem() }));
    expect(plain.result.status).toBe(200);
    expect(keyed.result.status).toBe(200);
    expect({ roundTrips: keyed.requests - plain.requests, commands: keyed.commands - plain.commands }).toEqual(
      expected(rows.idemFirst!),
    );
  });

  it("Idempotency-Key replay: EVALSHA + GET, for a small and a 1,000-item write alike", async () => {
    const headers = idem();
    await api.post("/v1/counters/cost/incr", { member: "m" }, { headers });
    const replay = await api.cost(() => api.post("/v1/counters/cost/incr", { member: "m" }, { headers }));
    expect(replay.result.headers.get("idempotent-replayed")).toBe("true");
    expect(costOf(replay)).toEqual(expected(rows.idemReplay!));

    const big = { items: Array.from({ length: 1000 }, (_, i) => ({ member: `b${i}` })) };
    const bigHeaders = idem();
    await api.post("/v1/counters/cost/incr", big, { headers: bigHeaders });
    const bigReplay = await api.cost(() => api.post("/v1/counters/cost/incr", big, { headers: bigHeaders }));
    expect(bigReplay.result.headers.get("idempotent-replayed")).toBe("true");
    expect(costOf(bigReplay)).toEqual(expected(rows.idemReplay!));
  });

  it("Idempotency-Key reused with another body: EVALSHA + GET, then 409", async () => {
    const headers = idem();
    await api.post("/v1/counters/cost/incr", { member: "m" }, { headers });
    const conflict = await api.cost(() => api.post("/v1/counters/cost/incr", { member: "other" }, { headers }));
    expect(conflict.result.status).toBe(409);
    expect(costOf(conflict)).toEqual(expected(rows.idemConflict!));
  });

  it("GET /healthz without a key: nothing", async () => {
    const m = await api.cost(() => api.get("/healthz", { key: "none" }));
    expect(m.result.status).toBe(200);
    expect(costOf(m)).toEqual(expected(rows.healthz!));
  });

  it("GET /healthz?deep=1 with a key: one PING", async () => {
    const m = await api.cost(() => api.get("/healthz?deep=1", { key: "read" }));
    expect(m.result.status).toBe(200);
    expect(costOf(m)).toEqual(expected(rows.healthzDeep!));
  });

  it("refused requests: nothing", async () => {
    const attempts = [
      () => api.post("/v1/counters/cost/incr", { member: "m" }, { key: "none" }),
      () => api.post("/v1/counters/cost/incr", { member: "m" }, { key: "read" }),
      () => api.post("/v1/counters/cost/incr", { member: "" }),
      () =>
        api.post("/v1/counters/cost/incr", undefined, {
          raw: "x".repeat(1024 * 1024 + 1),
          headers: { "content-type": "application/json" },
        }),
      () =>
        api.post("/v1/counters/cost/incr", undefined, { raw: "member=m", headers: { "content-type": "text/plain" } }),
      () => api.get("/healthz?deep=1", { key: "none" }),
    ];
    for (const attempt of attempts) {
      const m = await api.cost(attempt);
      expect(m.result.status).toBeGreaterThanOrEqual(400);
      expect(m.result.status).toBeLessThan(500);
      expect(costOf(m)).toEqual(expected(rows.rejected!));
    }
  });

  it("dashboard page and assets: nothing", async () => {
    for (const path of ["/", "/dashboard.js", "/dashboard.css"]) {
      const m = await api.cost(() => api.get(path, { key: "none" }));
      expect(m.result.status).toBe(200);
      expect(costOf(m)).toEqual(expected(rows.dashboardPage!));
    }
  });
});
