/**
 * Leaderboards v2 (issue 18): seasons on a fake clock (daily, ISO week, month;
 * the first instant of a season; a write racing the boundary), tie policies
 * carried over, kept seasons and their expiry, and movement (previousRank,
 * bestRank).
 */
import { afterAll, describe, expect, it } from "vitest";
import { seasonAt, seasonBefore, seasonById } from "../../src/leaderboards/seasons.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "lb-seasons" });
afterAll(() => api.cleanup());

const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;
const join = (board: string, player: string, body: Record<string, unknown> = { name: player }) =>
  api.put(`${base}/${board}/players/${player}`, body);
const score = (board: string, player: string, body: Record<string, unknown>) =>
  api.post(`${base}/${board}/players/${player}/score`, body);
const player = (board: string, p: string, season = "current") =>
  api.get(`${base}/${board}/players/${p}?season=${season}`);
const page = (board: string, season = "current") => api.get(`${base}/${board}?limit=100&season=${season}`);
/** A TTL Redis reports may be a second short of the one set (it rounds and time passes). */
function expectTtl(ttl: number, until: number) {
  const set = (until - api.now) / 1000;
  expect(ttl).toBeLessThanOrEqual(set);
  expect(ttl).toBeGreaterThanOrEqual(set - 2);
}
const order = (res: { body: { items: { player: string; score: number }[] } }) =>
  res.body.items.map((r) => [r.player, r.score]);

describe("season ids", () => {
  it("daily, ISO week and month ids in UTC, and back", () => {
    const at = (iso: string) => Date.parse(iso);
    expect(seasonAt("daily", at("2026-11-22T23:59:59.999Z")).id).toBe("2026-11-22");
    expect(seasonAt("daily", at("2026-11-23T00:00:00.000Z")).id).toBe("2026-11-23");
    // ISO weeks start on Monday; week 1 holds the year's first Thursday
    expect(seasonAt("weekly", at("2026-11-22T23:59:59.999Z")).id).toBe("2026-W47");
    expect(seasonAt("weekly", at("2026-11-23T00:00:00.000Z")).id).toBe("2026-W48");
    expect(seasonAt("weekly", at("2027-01-01T00:00:00.000Z")).id).toBe("2026-W53");
    expect(seasonAt("weekly", at("2024-12-30T00:00:00.000Z")).id).toBe("2025-W01");
    expect(seasonAt("weekly", at("2026-01-01T00:00:00.000Z"))).toMatchObject({
      id: "2026-W01",
      from: at("2025-12-29T00:00:00Z"),
    });
    expect(seasonAt("monthly", at("2026-11-30T23:59:59.999Z")).id).toBe("2026-11");
    expect(seasonAt("monthly", at("2026-12-01T00:00:00.000Z"))).toMatchObject({
      id: "2026-12",
      from: at("2026-12-01T00:00:00Z"),
      to: at("2027-01-01T00:00:00Z"),
    });
    expect(seasonBefore(seasonById("2026-W01")!)?.id).toBe("2025-W52");
    expect(seasonBefore(seasonById("2026-01")!)?.id).toBe("2025-12");
    expect(seasonById("2026-W53")?.id).toBe("2026-W53");
    expect(seasonById("2025-W53")).toBeNull();
    expect(seasonById("2026-02-30")).toBeNull();
    expect(seasonById("2026-13")).toBeNull();
  });
});

describe("daily seasons", () => {
  it("the live season changes exactly at midnight UTC; scores start at 0, profiles and join order carry over", async () => {
    api.setNow("2026-11-23T23:59:59.000Z");
    const conf = await api.put(`${base}/daily`, { reset: "daily" }, admin);
    expect(conf.status).toBe(200);
    expect(conf.body).toMatchObject({ reset: "daily", keepSeasons: 12, season: "2026-11-23" });
    await join("daily", "ann", { name: "Ann", score: 10 });
    await join("daily", "bob", { name: "Bob", score: 30 });
    await join("daily", "cy", { name: "Cy", score: 20 });
    api.setNow("2026-11-23T23:59:59.999Z"); // the last instant of the day
    expect((await score("daily", "ann", { by: 5 })).body).toEqual({ score: 15, rank: 3 });
    expect(order(await page("daily"))).toEqual([
      ["bob", 30],
      ["cy", 20],
      ["ann", 15],
    ]);

    api.setNow("2026-11-24T00:00:00.000Z"); // the first instant of the next
    const fresh = await page("daily");
    expect(fresh.body).toMatchObject({ items: [], total: 0, season: "2026-11-24" });
    expect(order(await page("daily", "previous"))).toEqual([
      ["bob", 30],
      ["cy", 20],
      ["ann", 15],
    ]);
    expect(order(await page("daily", "2026-11-23"))).toEqual([
      ["bob", 30],
      ["cy", 20],
      ["ann", 15],
    ]);
    // a player who has not played today reads as 0, unranked, with the final rank of yesterday
    expect((await player("daily", "bob")).body).toMatchObject({
      name: "Bob",
      score: 0,
      rank: null,
      percentile: null,
      total: 0,
      previousRank: 1,
      season: "2026-11-24",
    });

    // the first write of the season enters the player at 0, then applies the change
    expect((await score("daily", "cy", { by: 3 })).body).toEqual({ score: 3, rank: 1 });
    expect((await score("daily", "ann", { by: 3 })).body).toEqual({ score: 3, rank: 1 }); // joined before cy: wins the tie
    expect(order(await page("daily"))).toEqual([
      ["ann", 3],
      ["cy", 3],
    ]);
    const today = await page("daily");
    expect(today.body.items.map((r: { previousRank: number }) => r.previousRank)).toEqual([3, 2]);
    expect((await player("daily", "ann")).body).toMatchObject({
      name: "Ann",
      score: 3,
      rank: 1,
      previousRank: 3,
      bestRank: 1,
      total: 2,
      percentile: 50,
    });
    // yesterday is final and still readable by id
    expect((await player("daily", "ann", "2026-11-23")).body).toMatchObject({
      score: 15,
      rank: 3,
      total: 3,
      season: "2026-11-23",
    });
  });

  it("a write racing the boundary lands in the season of its own time, whatever arrives first", async () => {
    api.setNow("2026-11-25T00:00:00.000Z");
    await api.put(`${base}/race`, { reset: "daily" }, admin);
    await join("race", "ann");
    // a Worker already past midnight writes first...
    expect((await score("race", "ann", { by: 7 })).body).toEqual({ score: 7, rank: 1 });
    // ...then one whose request time is still the previous day
    api.setNow("2026-11-24T23:59:59.999Z");
    expect((await score("race", "ann", { by: 2 })).body).toEqual({ score: 2, rank: 1 });
    api.setNow("2026-11-25T00:00:01.000Z");
    expect((await player("race", "ann")).body).toMatchObject({ score: 7, rank: 1 });
    expect((await player("race", "ann", "previous")).body).toMatchObject({ score: 2, rank: 1 });
    // a batch is one script, so one season, whatever its size
    const batch = await api.post(`${base}/race/scores`, {
      items: [
        { player: "ann", by: 1 },
        { player: "ann", by: 1 },
      ],
    });
    expect(batch.body.results.map((r: { score: number }) => r.score)).toEqual([8, 9]);
  });

  it("seasons are listed with size and top 3; each key expires keepSeasons seasons after its end", async () => {
    api.setNow("2026-11-20T10:00:00.000Z");
    await api.put(`${base}/kept`, { reset: "daily", keepSeasons: 2 }, admin);
    for (const [i, p] of ["a", "b", "c", "d"].entries())
      await join("kept", p, { name: p.toUpperCase(), score: 10 + i });
    api.setNow("2026-11-21T10:00:00.000Z");
    await score("kept", "a", { by: 1 });
    const ttl = await command<number>(api.target, "TTL", `${api.prefix}:lb:kept:ranking:2026-11-21`);
    // lives until the start of 2026-11-24 (the 21st ends, then 2 more seasons are kept)
    expectTtl(ttl, Date.parse("2026-11-24T00:00:00Z"));
    const list = await api.get(`${base}/kept/seasons`);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ reset: "daily", current: "2026-11-21" });
    expect(list.body.seasons).toEqual([
      {
        id: "2026-11-21",
        from: Date.parse("2026-11-21T00:00:00Z"),
        to: Date.parse("2026-11-22T00:00:00Z"),
        players: 1,
        top: [{ rank: 1, player: "a", name: "A", score: 1 }],
      },
      {
        id: "2026-11-20",
        from: Date.parse("2026-11-20T00:00:00Z"),
        to: Date.parse("2026-11-21T00:00:00Z"),
        players: 4,
        top: [
          { rank: 1, player: "d", name: "D", score: 13 },
          { rank: 2, player: "c", name: "C", score: 12 },
          { rank: 3, player: "b", name: "B", score: 11 },
        ],
      },
    ]);
    // three days on, only the current season and the two before it are listed
    api.setNow("2026-11-23T10:00:00.000Z");
    expect((await api.get(`${base}/kept/seasons`)).body.seasons.map((s: { id: string }) => s.id)).toEqual([
      "2026-11-21",
    ]);
  });
});

describe("weekly and monthly seasons", () => {
  it("an ISO week ends on Sunday 23:59:59.999 UTC", async () => {
    api.setNow("2026-11-29T23:59:59.999Z"); // Sunday
    await api.put(`${base}/weekly`, { reset: "weekly" }, admin);
    await join("weekly", "ann", { name: "Ann", score: 4 });
    expect((await player("weekly", "ann")).body).toMatchObject({ score: 4, season: "2026-W48" });
    api.setNow("2026-11-30T00:00:00.000Z"); // Monday
    expect((await player("weekly", "ann")).body).toMatchObject({
      score: 0,
      rank: null,
      previousRank: 1,
      season: "2026-W49",
    });
    expect((await score("weekly", "ann", { set: 9 })).body).toEqual({ score: 9, rank: 1 });
    expect((await player("weekly", "ann", "2026-W48")).body).toMatchObject({ score: 4, rank: 1 });
    // a season id of another policy names no season of this board
    expect((await player("weekly", "ann", "2026-11-30")).status).toBe(404);
    expect((await player("weekly", "ann", "2026-W99")).status).toBe(400);
  });

  it("a month ends at its last millisecond; the key lives keepSeasons months past its end", async () => {
    api.setNow("2026-11-30T23:59:59.999Z");
    await api.put(`${base}/monthly`, { reset: "monthly", keepSeasons: 3 }, admin);
    await join("monthly", "ann", { name: "Ann", score: 1 });
    await join("monthly", "bob", { name: "Bob", score: 2 });
    expect((await page("monthly")).body.season).toBe("2026-11");
    api.setNow("2026-12-01T00:00:00.000Z");
    expect((await page("monthly")).body).toMatchObject({ season: "2026-12", total: 0 });
    await score("monthly", "ann", { by: 1 });
    const ttl = await command<number>(api.target, "TTL", `${api.prefix}:lb:monthly:ranking:2026-12`);
    expectTtl(ttl, Date.parse("2027-04-01T00:00:00Z"));
    expect((await player("monthly", "ann")).body).toMatchObject({ score: 1, rank: 1, previousRank: 2 });
    expect((await player("monthly", "bob")).body).toMatchObject({ score: 0, rank: null, previousRank: 1 });
  });
});

describe("tie policies across seasons, settings", () => {
  it("joined: the earlier joiner wins ties in every season; reached: whoever reached the score first this season", async () => {
    api.setNow("2026-11-10T12:00:00.000Z");
    await api.put(`${base}/tj`, { reset: "daily" }, admin);
    await api.put(`${base}/tr`, { reset: "daily", ties: "reached" }, admin);
    for (const b of ["tj", "tr"]) {
      await join(b, "early");
      await join(b, "late");
    }
    api.setNow("2026-11-11T12:00:00.000Z");
    for (const b of ["tj", "tr"]) {
      await score(b, "late", { by: 5 });
      await score(b, "early", { by: 5 });
    }
    expect(order(await page("tj"))).toEqual([
      ["early", 5],
      ["late", 5],
    ]);
    expect(order(await page("tr"))).toEqual([
      ["late", 5],
      ["early", 5],
    ]);
  });

  it("reset changes only on a board without players (409 board_not_empty); PUT keeps what it omits", async () => {
    api.setNow("2026-11-10T12:00:00.000Z");
    await api.put(`${base}/settings`, { reset: "weekly", maxScore: 100 }, admin);
    await join("settings", "p");
    const refused = await api.put(`${base}/settings`, { reset: "daily" }, admin);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("board_not_empty");
    const kept = await api.put(`${base}/settings`, { keepSeasons: 4 }, admin);
    expect(kept.body).toMatchObject({
      reset: "weekly",
      keepSeasons: 4,
      maxScore: 100,
      minScore: null,
      players: 1,
      season: "2026-W46",
    });
    expect((await api.get(`${base}/settings/count`)).body).toMatchObject({
      reset: "weekly",
      keepSeasons: 4,
      maxScore: 100,
      players: 1,
    });
    expect((await api.get(`${base}/settings?season=previous`)).body).toMatchObject({
      items: [],
      total: 0,
      season: "2026-W45",
    });
    expect((await api.get(`${base}/nosuch/seasons`)).status).toBe(404);
    // a board without seasons has no previous one
    await join("plain", "p");
    expect((await page("plain", "previous")).status).toBe(404);
    expect((await api.get(`${base}/plain/seasons`)).body).toEqual({
      board: "plain",
      reset: "none",
      current: null,
      seasons: [],
    });
    expect((await api.put(`${base}/settings`, { keepSeasons: 53 }, admin)).status).toBe(400);
  });

  it("deleting a seasonal board removes every season's ranking; removing a player leaves the finished seasons as they were", async () => {
    api.setNow("2026-11-10T12:00:00.000Z");
    await api.put(`${base}/gone`, { reset: "daily" }, admin);
    await join("gone", "a");
    await join("gone", "b");
    api.setNow("2026-11-11T12:00:00.000Z");
    await score("gone", "a", { by: 1 });
    await score("gone", "b", { by: 2 });
    expect((await api.del(`${base}/gone/players/b`)).status).toBe(204);
    expect(order(await page("gone"))).toEqual([["a", 1]]);
    expect(order(await page("gone", "previous"))).toEqual([
      ["a", 0],
      ["b", 0],
    ]);
    expect((await api.keys()).filter((k) => k.includes(":lb:gone:")).length).toBeGreaterThan(3);
    expect((await api.del(`${base}/gone`, admin)).status).toBe(204);
    expect((await api.keys()).filter((k) => k.includes(":lb:gone:"))).toEqual([]);
  });
});

describe("movement", () => {
  it("bestRank is the best rank seen at the player's writes this season, never worse than the rank now; previousRank is null without seasons", async () => {
    api.setNow("2026-11-10T12:00:00.000Z");
    await join("mv", "b", { name: "B", score: 20 });
    await join("mv", "a", { name: "A", score: 10 });
    expect((await player("mv", "a")).body).toMatchObject({ rank: 2, bestRank: 2, previousRank: null });
    await score("mv", "a", { by: 15 }); // 25: first
    expect((await player("mv", "a")).body).toMatchObject({ rank: 1, bestRank: 1 });
    await score("mv", "b", { by: 10 }); // 30: b first again
    expect((await player("mv", "a")).body).toMatchObject({ rank: 2, bestRank: 1 });
    const rows = (await page("mv")).body.items;
    expect(rows.map((r: { player: string; bestRank: number }) => [r.player, r.bestRank])).toEqual([
      ["b", 1],
      ["a", 1],
    ]);
    expect(
      (await api.get(`${base}/mv/players/a/around?k=1`)).body.items.map((r: { bestRank: number }) => r.bestRank),
    ).toEqual([1, 1]);
  });

  it("bestRank starts again each season", async () => {
    api.setNow("2026-11-10T12:00:00.000Z");
    await api.put(`${base}/mvs`, { reset: "daily" }, admin);
    await join("mvs", "a", { name: "A", score: 10 });
    await join("mvs", "b", { name: "B", score: 5 });
    api.setNow("2026-11-11T12:00:00.000Z");
    await score("mvs", "b", { by: 3 });
    await score("mvs", "a", { by: 1 });
    expect((await player("mvs", "a")).body).toMatchObject({ rank: 2, bestRank: 2, previousRank: 1 });
    expect((await player("mvs", "b")).body).toMatchObject({ rank: 1, bestRank: 1, previousRank: 2 });
  });

  it("a finished season reads its own bestRank while the entry holds it, else null (never its final rank)", async () => {
    api.setNow("2026-11-10T12:00:00.000Z");
    await api.put(`${base}/mvp`, { reset: "daily" }, admin);
    await join("mvp", "a", { name: "A", score: 10 }); // a: rank 1
    await join("mvp", "b", { name: "B", score: 20 }); // a: rank 2, best 1
    api.setNow("2026-11-11T12:00:00.000Z");
    await score("mvp", "a", { by: 1 });
    const first = (season: string) => player("mvp", "a", season).then((r) => r.body);
    expect(await first("2026-11-10")).toMatchObject({ rank: 2, bestRank: 1 });
    // page and around-me rows read the same entry
    expect((await page("mvp", "2026-11-10")).body.items.map((r: { bestRank: number }) => r.bestRank)).toEqual([1, 1]);
    // a late write into the 10th (a Worker whose clock is behind) and back: each season keeps its best
    api.setNow("2026-11-10T23:59:59.999Z");
    await score("mvp", "a", { by: 0 });
    api.setNow("2026-11-11T12:00:01.000Z");
    await score("mvp", "b", { by: 5 }); // b enters the 11th ahead of a: a is rank 2 there, best 1
    await score("mvp", "a", { by: 0 }); // a's latest write is in the 11th again
    expect(await first("2026-11-11")).toMatchObject({ rank: 2, bestRank: 1 });
    expect(await first("2026-11-10")).toMatchObject({ rank: 2, bestRank: 1 });
    // two seasons later the 10th's best is no longer kept: null, not the final rank 2
    api.setNow("2026-11-12T12:00:00.000Z");
    await score("mvp", "a", { by: 1 });
    expect(await first("2026-11-10")).toMatchObject({ rank: 2, bestRank: null });
    expect(await first("2026-11-11")).toMatchObject({ rank: 2, bestRank: 1 });
  });
});
