import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

describe("trending edge cache and the host it runs on", () => {
  const api = createTestApi({ label: "trend-edge-host", vars: { TRENDING_CACHE_SECONDS: "30" } });
  afterAll(() => api.cleanup());

  it("says X-Edgestats-Cache: off on *.workers.dev, where the Cache API does nothing, and reads Redis every time", async () => {
    expect((await api.post("/v1/trending/host/events", { member: "a" })).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const { result, requests } = await api.cost(() =>
        api.get("https://edgestats.someone.workers.dev/v1/trending/host/top?n=5&window=24h"),
      );
      expect(result.status).toBe(200);
      expect(result.headers.get("x-edgestats-cache")).toBe("off");
      expect(result.body.items).toEqual([{ rank: 1, member: "a", count: 1 }]);
      expect(requests).toBe(1);
    }
  });

  it("caches on a custom domain: a miss, then a hit that costs no Redis round trip", async () => {
    const url = "https://stats.example.com/v1/trending/host/top?n=5&window=24h";
    const first = await api.get(url);
    expect(first.headers.get("x-edgestats-cache")).toBe("miss");
    const { result, requests } = await api.cost(() => api.get(url));
    expect(result.headers.get("x-edgestats-cache")).toBe("hit");
    expect(requests).toBe(0);
  });

  it("says off when TRENDING_CACHE_SECONDS is 0", async () => {
    const off = createTestApi({ label: "trend-edge-off", vars: { TRENDING_CACHE_SECONDS: "0" } });
    const res = await off.get("/v1/trending/host/top?n=5&window=24h");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-edgestats-cache")).toBe("off");
    await off.cleanup();
  });
});
