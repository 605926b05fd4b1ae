/**
 * Review 22 leftovers through the real Worker (wrangler dev): trending's tie order (equal counts by
 * member, UTF-8 byte order; docs/trending.md) is the same on an edge-cache miss, a hit, a bypass
 * (`Cache-Control: no-cache`) and for every `n` (each a prefix of the longer one), and the member
 * lookup's rank agrees; members chosen so byte order differs from a locale's.
 */
import { afterAll, describe, expect, it } from "vitest";
import { bytes } from "../helpers/trending-model.ts";
import { createTestApi } from "../helpers/worker.ts";

const NAMES = ["a", "B", "b", "Z", "z", "é", "e", "E", "ö", "o", "ß", "ss", "日本", "日", "😀", "a-b", "ab", "A", "_x"];

describe("review 22: trending ties through the Worker and its edge cache", () => {
  const api = createTestApi({ label: "r22-ties", vars: { TRENDING_CACHE_SECONDS: "30" } });
  afterAll(() => api.cleanup());

  it("miss, hit, bypass and every n list a tie in byte order; the member lookup ranks alike", async () => {
    const events = [...NAMES.map((member) => ({ member, count: 2 })), { member: "top", count: 5 }];
    expect((await api.post("/v1/trending/r22ties/events", { events })).status).toBe(200);
    const want = ["top", ...[...NAMES].sort(bytes)].map((member, i) => ({
      rank: i + 1,
      member,
      count: member === "top" ? 5 : 2,
    }));
    const url = (n: number) => `https://stats.example.com/v1/trending/r22ties/top?n=${n}&window=24h`;
    const miss = await api.get(url(7));
    expect(miss.headers.get("x-edgestats-cache")).toBe("miss");
    const hit = await api.get(url(7));
    expect(hit.headers.get("x-edgestats-cache")).toBe("hit");
    const bypass = await api.get(url(7), { headers: { "cache-control": "no-cache" } });
    expect(bypass.headers.get("x-edgestats-cache")).toBe("bypass");
    for (const r of [miss, hit, bypass]) expect(r.body.items).toEqual(want.slice(0, 7));
    for (const n of [1, 2, 4, 13, 20, 100]) {
      const r = await api.get(url(n));
      expect(r.body.items, `n=${n}`).toEqual(want.slice(0, n));
    }
    for (const w of want) {
      const m = await api.get(`/v1/trending/r22ties/members/${encodeURIComponent(w.member)}?window=24h`);
      expect(m.status, w.member).toBe(200);
      expect({ count: m.body.count, rank: m.body.rank, rankExact: m.body.rankExact }, w.member).toEqual({
        count: w.count,
        rank: w.rank,
        rankExact: true,
      });
    }
  });
});
