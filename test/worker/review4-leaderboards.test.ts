/**
 * Review 4, leaderboards over HTTP in workerd (the library's model is test/redis/review4-leaderboards.test.ts):
 * the findings seen by an API client, a batch refused by a guard writing nothing, and the live season
 * changing exactly at 00:00:00.000 UTC with the test api's clock.
 */
import { describe, expect, it } from "vitest";
import { cleanedUpAfterAll, createTestApi, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string, start: string) => track(createTestApi({ label, start }));
const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;

describe("review 4: leaderboards over HTTP", () => {
  it("ties reached: GET …/players/{p}?season=previous answers the row the previous season's page shows", async () => {
    // FIXED (was medium): see test/redis/review4-leaderboards.test.ts, "ties reached: a player who scored
    // this season still reads its rank in the previous season". The player's own read of last season
    // says score 0, rank null after one score change this season, while the page lists the player first.
    const api = newApi("r4lb-prev", "2026-12-27T12:00:00.000Z");
    await api.put(`${base}/pr`, { ties: "reached", reset: "daily" }, admin);
    await api.put(`${base}/pr/players/a`, { name: "A", score: 10 });
    await api.put(`${base}/pr/players/b`, { name: "B", score: 5 });
    api.setNow("2026-12-28T00:00:00.000Z");
    expect((await api.post(`${base}/pr/players/a/score`, { by: 1 })).status).toBe(200);
    const page = await api.get(`${base}/pr?season=previous`);
    expect(page.body.items.map((r: { player: string; rank: number }) => [r.player, r.rank])).toEqual([
      ["a", 1],
      ["b", 2],
    ]);
    const me = await api.get(`${base}/pr/players/a?season=previous`);
    expect(me.body).toMatchObject({ score: 10, rank: 1, total: 2, season: "2026-12-27" });
  });

  it("a batch with one item past maxIncrement is a 422 naming the item; nothing written, no season key entered", async () => {
    const api = newApi("r4lb-guard", "2026-12-27T23:59:59.999Z");
    await api.put(`${base}/g`, { reset: "daily", maxIncrement: 5, maxScore: 20 }, admin);
    await api.put(`${base}/g/players/a`, { name: "A", score: 1 });
    await api.put(`${base}/g/players/b`, { name: "B", score: 2 });
    // the last millisecond of the 27th lands in the 27th
    expect((await api.post(`${base}/g/players/a/score`, { by: 1 })).body).toMatchObject({ score: 2 });
    api.setNow("2026-12-28T00:00:00.000Z");
    const refused = await api.post(`${base}/g/scores`, {
      items: [
        { player: "b", by: 3 },
        { player: "a", set: 7 },
        { player: "b", by: 3 },
      ],
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe("score_rejected");
    expect(refused.body.error.details[0].path).toBe("items.2");
    // the new day has no players: the refused batch entered nobody
    expect((await api.get(`${base}/g`)).body).toMatchObject({ items: [], total: 0, season: "2026-12-28" });
    expect((await api.get(`${base}/g/count`)).body.players).toBe(0);
    const prev = await api.get(`${base}/g?season=previous`);
    expect(prev.body.items.map((r: { player: string; score: number }) => [r.player, r.score])).toEqual([
      ["a", 2],
      ["b", 2],
    ]);
    const ok = await api.post(`${base}/g/scores`, {
      items: [
        { player: "b", by: 3 },
        { player: "a", set: 7 },
        { player: "b", by: 2 },
      ],
    });
    expect(ok.status).toBe(200);
    expect(ok.body.results).toEqual([
      { player: "b", score: 3, rank: 2 },
      { player: "a", score: 7, rank: 1 },
      { player: "b", score: 5, rank: 2 },
    ]);
    const b = await api.get(`${base}/g/players/b`);
    // on the 27th a and b ended level at 2 and a joined first (ties joined): b was 2nd
    expect(b.body).toMatchObject({ score: 5, rank: 2, previousRank: 2, bestRank: 2, total: 2, percentile: 0 });
  });
});
