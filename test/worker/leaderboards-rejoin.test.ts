/**
 * A player removed from a seasonal board and joined again (review 15's pin, fixed): the join takes
 * a new ranking member, and every read of a finished season the player was in finds the old one
 * the removal kept (`gone:<player>` in the settings, brought into the new entry's <past>), under
 * both tie policies, over several removals and several seasons. The Worker in workerd, real Redis
 * behind the local Upstash server, the test api's fake clock.
 */
import { describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll, createTestApi, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;

function board(label: string, name: string, start: string) {
  const api = track(createTestApi({ label, start }));
  const at = `${base}/${name}`;
  return {
    api,
    join: (p: string, body: Record<string, unknown> = { name: p }) => api.put(`${at}/players/${p}`, body),
    remove: (p: string) => api.del(`${at}/players/${p}`),
    score: (p: string, by: number) => api.post(`${at}/players/${p}/score`, { by }),
    /** [score, rank, previousRank] of the player in the season */
    mine: async (p: string, season = "current") => {
      const b = (await api.get(`${at}/players/${p}?season=${season}`)).body;
      return [b.score, b.rank, b.previousRank];
    },
    rows: async (season = "current") =>
      (await api.get(`${at}?limit=100&season=${season}`)).body.items.map(
        (r: { player: string; rank: number; score: number }) => [r.player, r.rank, r.score],
      ),
    subset: async (players: string[], season: string) => {
      const b = (await api.post(`${at}/rank?season=${season}`, { players }, { key: "read" })).body;
      return { items: b.items.map((r: { player: string; rank: number }) => [r.player, r.rank]), unknown: b.unknown };
    },
    around: async (p: string, season: string) =>
      (await api.get(`${at}/players/${p}/around?k=1&season=${season}`)).body.rank,
    gone: (p: string) => command<string | null>(api.target, "HGET", `${api.prefix}:lb:${name}:settings`, `gone:${p}`),
  };
}

describe("a player removed and joined again reads the finished seasons it was in", () => {
  it("ties reached: player, subset ranking, around-me and previousRank agree with yesterday's page", async () => {
    const b = board("rj-reached", "rr", "2026-11-10T10:00:00.000Z");
    await b.api.put(`${base}/rr`, { reset: "daily", ties: "reached" }, admin);
    await b.join("a", { name: "A", score: 5 });
    await b.join("b", { name: "B", score: 3 });
    await b.score("a", 1);
    b.api.setNow("2026-11-11T10:00:00.000Z");
    await b.score("a", 2);
    expect((await b.remove("a")).status).toBe(204);
    expect(await b.gone("a")).not.toBeNull();
    expect((await b.join("a", { name: "A2", score: 1 })).status).toBe(201);
    expect(await b.gone("a")).toBeNull(); // the new entry holds it now
    expect(await b.rows("previous")).toEqual([
      ["a", 1, 6],
      ["b", 2, 3],
    ]);
    expect(await b.mine("a", "previous")).toEqual([6, 1, null]);
    expect(await b.subset(["b", "a"], "previous")).toEqual({
      items: [
        ["a", 1],
        ["b", 2],
      ],
      unknown: [],
    });
    expect(await b.around("a", "previous")).toBe(1);
    expect(await b.mine("a")).toEqual([1, 1, 1]);
    // the next season: yesterday (the re-joined member) and the day before (the old one) both read
    b.api.setNow("2026-11-12T10:00:00.000Z");
    await b.score("a", 4);
    expect(await b.mine("a")).toEqual([4, 1, 1]);
    expect(await b.mine("a", "2026-11-11")).toEqual([1, 1, 1]);
    expect(await b.mine("a", "2026-11-10")).toEqual([6, 1, null]);
  });

  it("ties joined, keepSeasons 3: every kept season the old member was in reads, the re-join's season reads the new one", async () => {
    const b = board("rj-joined", "rj", "2026-11-10T10:00:00.000Z");
    await b.api.put(`${base}/rj`, { reset: "daily", keepSeasons: 3 }, admin);
    await b.join("a", { name: "A", score: 5 });
    await b.join("b", { name: "B", score: 3 });
    b.api.setNow("2026-11-11T10:00:00.000Z");
    await b.score("b", 2);
    await b.score("a", 1); // a is second on the 11th
    b.api.setNow("2026-11-12T10:00:00.000Z");
    await b.remove("a"); // a did not play the 12th: the 10th and 11th keep its member
    await b.join("a", { name: "A2", score: 9 });
    expect(await b.mine("a", "2026-11-10")).toEqual([5, 1, null]);
    expect(await b.mine("a", "2026-11-11")).toEqual([1, 2, 1]);
    expect(await b.mine("a")).toEqual([9, 1, 2]);
    expect(await b.subset(["a", "b"], "2026-11-11")).toEqual({
      items: [
        ["b", 1],
        ["a", 2],
      ],
      unknown: [],
    });
    b.api.setNow("2026-11-13T10:00:00.000Z");
    await b.score("a", 1);
    expect(await b.mine("a", "previous")).toEqual([9, 1, 2]);
    expect(await b.mine("a", "2026-11-11")).toEqual([1, 2, 1]);
    expect(await b.mine("a", "2026-11-10")).toEqual([5, 1, null]);
    expect(await b.mine("a")).toEqual([1, 1, 1]);
  });

  it("ties joined: removed twice in one season, then again the next day: each season reads its own member", async () => {
    const b = board("rj-twice", "rt", "2026-11-10T10:00:00.000Z");
    await b.api.put(`${base}/rt`, { reset: "daily" }, admin);
    await b.join("a", { name: "A", score: 5 });
    await b.join("b", { name: "B", score: 7 });
    b.api.setNow("2026-11-11T10:00:00.000Z");
    await b.score("a", 2);
    await b.remove("a");
    await b.join("a", { name: "A", score: 4 });
    await b.remove("a"); // the member of the 11th only went with it: the 10th keeps the first one
    await b.join("a", { name: "A", score: 8 });
    expect(await b.mine("a", "previous")).toEqual([5, 2, null]);
    expect(await b.mine("a")).toEqual([8, 1, 2]);
    b.api.setNow("2026-11-12T10:00:00.000Z");
    await b.score("a", 1);
    await b.remove("a");
    await b.join("a", { name: "A", score: 3 });
    expect(await b.rows("2026-11-11")).toEqual([["a", 1, 8]]);
    expect(await b.mine("a", "2026-11-11")).toEqual([8, 1, 2]);
    expect(await b.mine("a", "2026-11-10")).toEqual([5, 2, null]);
    expect(await b.mine("a")).toEqual([3, 1, 1]);
  });

  it("a player only the current season ranks keeps nothing; a board without seasons keeps nothing", async () => {
    const b = board("rj-none", "rn", "2026-11-10T10:00:00.000Z");
    await b.api.put(`${base}/rn`, { reset: "daily" }, admin);
    await b.join("a", { name: "A", score: 5 });
    await b.join("b", { name: "B", score: 3 });
    await b.remove("a");
    expect(await b.gone("a")).toBeNull();
    expect((await b.join("a", { name: "A", score: 1 })).status).toBe(201);
    expect(await b.mine("a")).toEqual([1, 2, null]);
    const n = board("rj-flat", "rf", "2026-11-10T10:00:00.000Z");
    await n.join("a", { name: "A", score: 5 });
    await n.join("b", { name: "B", score: 3 });
    await n.remove("a");
    expect(await n.gone("a")).toBeNull();
  });
});
