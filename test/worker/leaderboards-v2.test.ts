/**
 * Leaderboards v2 (issue 18): score guards, percentile and total, subset
 * ranking with ties under both policies, and the read scope of the subset
 * ranking's POST.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "lb-v2" });
afterAll(() => api.cleanup());

const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;
const join = (board: string, player: string, body: Record<string, unknown> = { name: player }) =>
  api.put(`${base}/${board}/players/${player}`, body);
const score = (board: string, player: string, body: Record<string, unknown>) =>
  api.post(`${base}/${board}/players/${player}/score`, body);
const rank = (board: string, players: string[], key = "read") =>
  api.post(`${base}/${board}/rank`, { players }, { key });

describe("guards", () => {
  it("a write outside minScore, maxScore or maxIncrement is a 422 score_rejected and writes nothing", async () => {
    const conf = await api.put(`${base}/g`, { minScore: -10, maxScore: 1000, maxIncrement: 50 }, admin);
    expect(conf.body).toMatchObject({ minScore: -10, maxScore: 1000, maxIncrement: 50 });
    await join("g", "a", { name: "A", score: 990 });
    await join("g", "b", { name: "B" });
    const before = await api.keys();
    const snapshot = async () => (await api.get(`${base}/g?limit=10`)).body.items;
    const rows = await snapshot();

    const over = await score("g", "a", { by: 11 });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe("score_rejected");
    expect((await score("g", "b", { by: 51 })).status).toBe(422);
    expect((await score("g", "b", { by: -11 })).status).toBe(422);
    expect((await score("g", "b", { set: 1001 })).status).toBe(422);
    expect((await score("g", "b", { set: 5000, mode: "best" })).status).toBe(422);
    expect((await join("g", "c", { name: "C", score: 1001 })).status).toBe(422);
    // split into a batch, an increment over maxIncrement is still refused, whole
    const split = await api.post(`${base}/g/scores`, {
      items: [
        { player: "a", by: 1 },
        { player: "b", by: 30 },
        { player: "b", by: 30 },
      ],
    });
    expect(split.status).toBe(422);
    expect(split.body.error.details).toEqual([{ path: "items.2", message: "refused by maxIncrement" }]);
    expect(await api.keys()).toEqual(before);
    expect(await snapshot()).toEqual(rows);

    // inside the guards it is written; a best that is not better writes nothing and passes
    expect((await score("g", "a", { by: 10 })).body).toEqual({ score: 1000, rank: 1 });
    expect((await score("g", "b", { by: -10 })).body).toEqual({ score: -10, rank: 2 });
    expect((await score("g", "a", { set: 3, mode: "best" })).body).toEqual({ score: 1000, rank: 1 });
    // null clears a guard
    await api.put(`${base}/g`, { maxScore: null, maxIncrement: null }, admin);
    expect((await score("g", "a", { by: 5000 })).body).toEqual({ score: 6000, rank: 1 });
    expect((await api.put(`${base}/g`, { minScore: 10, maxScore: 5 }, admin)).status).toBe(400);
    expect((await api.put(`${base}/g`, { minScore: 7000 }, admin)).status).toBe(200);
    expect((await api.put(`${base}/g`, { maxScore: 6999 }, admin)).status).toBe(400); // below the stored minScore
    expect((await api.put(`${base}/g`, { maxIncrement: 0 }, admin)).status).toBe(400);
  });

  it("attack: an ingest key cannot change a board's guards", async () => {
    await api.put(`${base}/ga`, { maxScore: 10 }, admin);
    expect((await api.put(`${base}/ga`, { maxScore: null })).status).toBe(403);
    expect((await api.get(`${base}/ga/count`)).body.maxScore).toBe(10);
  });
});

describe("percentile and total", () => {
  it("is the share of players ranked strictly below, floored to two decimals", async () => {
    for (let i = 0; i < 7; i++) await join("pct", `p${i}`, { name: `P${i}`, score: 100 - i });
    const read = async (p: string) => (await api.get(`${base}/pct/players/${p}`)).body;
    expect(await read("p0")).toMatchObject({ rank: 1, total: 7, percentile: 85.71 });
    expect(await read("p3")).toMatchObject({ rank: 4, total: 7, percentile: 42.85 });
    expect(await read("p6")).toMatchObject({ rank: 7, total: 7, percentile: 0 });
  });
});

describe("subset ranking", () => {
  it("returns the players in board order with global and subset ranks, unknown players apart (ties: joined)", async () => {
    await join("fr", "a", { name: "A", score: 5 });
    await join("fr", "b", { name: "B", score: 9 });
    await join("fr", "c", { name: "C", score: 5 });
    await join("fr", "d", { name: "D", score: 7 });
    await join("fr", "e", { name: "E", score: 5 });
    const res = await rank("fr", ["e", "nobody", "a", "c", "a"]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      items: [
        { player: "a", name: "A", score: 5, rank: 3, subsetRank: 1 },
        { player: "c", name: "C", score: 5, rank: 4, subsetRank: 2 },
        { player: "e", name: "E", score: 5, rank: 5, subsetRank: 3 },
      ],
      unknown: ["nobody"],
      season: null,
    });
  });

  it("orders ties by who reached the score first (ties: reached)", async () => {
    await api.put(`${base}/frr`, { ties: "reached" }, admin);
    for (const p of ["a", "b", "c"]) await join("frr", p);
    await score("frr", "c", { by: 5 });
    await score("frr", "a", { by: 5 });
    await score("frr", "b", { by: 6 });
    await score("frr", "b", { by: -1 }); // reaches 5 last
    const res = await rank("frr", ["a", "b", "c"]);
    expect(
      res.body.items.map((r: { player: string; rank: number; subsetRank: number }) => [r.player, r.rank, r.subsetRank]),
    ).toEqual([
      ["c", 1, 1],
      ["a", 2, 2],
      ["b", 3, 3],
    ]);
  });

  it("is a read: a read key may POST it, an ingest key may not; it takes up to 1,000 valid names", async () => {
    await join("frs", "a");
    expect((await rank("frs", ["a"], "read")).status).toBe(200);
    expect((await rank("frs", ["a"], "admin")).status).toBe(200);
    expect((await rank("frs", ["a"], "ingest")).status).toBe(403);
    // the read scope covers only this POST: a read key still cannot score
    expect((await api.post(`${base}/frs/players/a/score`, { by: 1 }, { key: "read" })).status).toBe(403);
    expect((await rank("frs", [])).status).toBe(400);
    expect((await rank("frs", ["bad name"])).status).toBe(400);
    expect(
      (
        await rank(
          "frs",
          Array.from({ length: 1001 }, (_, i) => `p${i}`),
        )
      ).status,
    ).toBe(400);
    const many = await rank(
      "frs",
      Array.from({ length: 1000 }, (_, i) => (i === 999 ? "a" : `p${i}`)),
    );
    expect(many.body.items).toHaveLength(1);
    expect(many.body.unknown).toHaveLength(999);
  });
});
