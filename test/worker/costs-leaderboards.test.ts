/**
 * The leaderboard rows of the cost table (test/costs/leaderboards.ts), each
 * measured in the state it names with the local Upstash server's counters and
 * asserted exactly. Every script is called once before it is measured.
 */
import { afterAll, describe, expect, it } from "vitest";
import { area } from "../costs/leaderboards.ts";
import { checkCursorPass, costOf, expected } from "../costs/types.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "costs-lb" });
afterAll(() => api.cleanup());

const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;
const rows = area.rows;
type RowId = keyof typeof rows;
const join = (board: string, player: string, body: Record<string, unknown> = { name: player }) =>
  api.put(`${base}/${board}/players/${player}`, body);
const score = (board: string, player: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
  api.post(`${base}/${board}/players/${player}/score`, body, headers ? { headers } : undefined);

async function check(id: RowId, call: () => Promise<{ status: number }>, status = 200) {
  const measured = await api.cost(call);
  expect(measured.result.status, id).toBe(status);
  expect(costOf(measured), id).toEqual(expected(rows[id]));
}

describe("leaderboard costs", () => {
  it("PUT board, join: new board, new player, existing player", async () => {
    await api.put(`${base}/warm`, {}, admin);
    await check("configureNew", () => api.put(`${base}/c-conf`, { ties: "joined" }, admin));
    await check("configureExisting", () => api.put(`${base}/c-conf`, {}, admin));
    await join("warm", "w");
    await check("joinNewBoard", () => join("c-join", "p1"), 201);
    await check("joinNew", () => join("c-join", "p2"), 201);
    await check("joinExisting", () => join("c-join", "p2", { name: "P2", meta: { team: "x" } }));
  });

  it("score: increment, Idempotency-Key, reached ties, set replace and best, batch", async () => {
    await join("c-score", "a", { name: "A", score: 10 });
    await join("c-score", "b", { name: "B", score: 20 });
    await score("c-score", "a", { by: 1 });
    await check("increment", () => score("c-score", "a", { by: 1 }));
    await check("incrementIdempotent", () => score("c-score", "a", { by: 1 }, { "idempotency-key": "cost-1" }));
    await check("incrementReplay", () => score("c-score", "a", { by: 1 }, { "idempotency-key": "cost-1" }));
    await check("setReplace", () => score("c-score", "a", { set: 15 }));
    await check("setBestNotBetter", () => score("c-score", "a", { set: 1, mode: "best" }));
    // better, still behind b (20): taking the lead has rows of its own
    await check("setBestBetter", () => score("c-score", "a", { set: 18, mode: "best" }));
    await score("c-score", "b", { by: 1 });
    await check("incrementTakesLead", () => score("c-score", "a", { by: 10 }));
    await check("setLeaderFallsBack", () => score("c-score", "a", { set: 1 }));
    await api.put(
      "/v1/webhooks/c-leader",
      {
        url: "https://example.com/hook",
        events: ["leaderboard.leader"],
        filter: { board: "c-score" },
        secret: "s".repeat(16),
      },
      admin,
    );
    await check("incrementTakesLeadHook", () => score("c-score", "a", { by: 100 }));
    await api.del("/v1/webhooks/c-leader", admin);

    await api.put(`${base}/c-reached`, { ties: "reached" }, admin);
    await join("c-reached", "r", { name: "R" });
    // the first write makes r the board's leader; the measured one is steady
    await score("c-reached", "r", { by: 1 });
    await check("incrementReached", () => score("c-reached", "r", { by: 1 }));

    const players = Array.from({ length: 100 }, (_, i) => `p${i}`);
    for (const p of players) await join("c-batch", p, { name: p, score: 1 });
    const items = players.map((player) => ({ player, by: 1 }));
    await api.post(`${base}/c-batch/scores`, { items });
    await check("batch100", () => api.post(`${base}/c-batch/scores`, { items }));
  });

  it("reads: get, page, around-me, count, list", async () => {
    await api.get(`${base}/c-batch/players/p5`);
    await check("get", () => api.get(`${base}/c-batch/players/p5`));
    await api.get(`${base}/c-batch?limit=10`);
    await check("page", () => api.get(`${base}/c-batch?page=2&limit=10`));
    await api.get(`${base}/c-batch/players/p50/around?k=5`);
    await check("around", () => api.get(`${base}/c-batch/players/p50/around?k=5`));
    await api.get(`${base}/c-batch/count`);
    await check("count", () => api.get(`${base}/c-batch/count`));
    await api.get(base);
    await check("list", () => api.get(base));
    await check("list", () => api.get(`${base}?offset=1&limit=2`));
    // By cursor: every page but the pass's last costs listNext, the last listLast.
    const costs = await checkCursorPass(api.get, check, { base, limit: 2, next: "listNext", last: "listLast" });
    expect(costs.at(-1)).toBe("listLast");
    expect(costs).toContain("listNext");
  });

  it("v2: guards, seasons, movement, subset ranking, seasons list", async () => {
    api.setNow("2026-11-20T10:00:00.000Z");
    await api.put(`${base}/c-guard`, { maxScore: 1000, maxIncrement: 10 }, admin);
    await join("c-guard", "a", { name: "A" });
    await score("c-guard", "a", { by: 1 });
    await check("incrementGuarded", () => score("c-guard", "a", { by: 1 }));
    await check("incrementRejected", () => score("c-guard", "a", { by: 11 }), 422);
    await check("configureSeasons", () => api.put(`${base}/c-guard`, { maxScore: 2000, maxIncrement: 20 }, admin));

    // a climbs from #3 to #2: a better rank, not the lead
    await join("c-best", "c", { name: "C", score: 20 });
    await join("c-best", "b", { name: "B", score: 10 });
    await join("c-best", "a", { name: "A" });
    await score("c-best", "a", { by: 6 });
    await check("incrementBetterRank", () => score("c-best", "a", { by: 6 }));

    await api.put(`${base}/c-daily`, { reset: "daily" }, admin);
    for (const p of Array.from({ length: 12 }, (_, i) => `p${i}`)) await join("c-daily", p, { name: p, score: 1 });
    await api.put(`${base}/c-daily-r`, { reset: "daily", ties: "reached" }, admin);
    for (const p of ["p0", "p1", "p2"]) await join("c-daily-r", p, { name: p, score: 1 });
    await api.put(`${base}/c-daily-j`, { reset: "daily" }, admin);
    await join("c-daily-j", "w", { name: "W" });
    await join("c-daily-j", "a", { name: "A" });
    api.setNow("2026-11-21T10:00:00.000Z");
    await join("c-daily-j", "w", { name: "W2" });
    await check("joinNewSeasonal", () => join("c-daily-j", "n", { name: "N" }), 201);
    await check("joinExistingSeasonFirst", () => join("c-daily-j", "a", { name: "A2" }));
    await check("joinExisting", () => join("c-daily-j", "a", { name: "A3" }));
    await check("joinExistingSeasonFirstReached", () => join("c-daily-r", "p2", { name: "P2" }));
    await score("c-daily", "p0", { by: 1 });
    await check("incrementSeasonFirst", () => score("c-daily", "p1", { by: 1 }));
    await score("c-daily-r", "p0", { by: 5 });
    await check("incrementSeasonFirstReached", () => score("c-daily-r", "p1", { by: 1 }));
    await check("incrementSeasonal", () => score("c-daily", "p0", { by: 1 }));
    for (const p of Array.from({ length: 10 }, (_, i) => `p${i}`)) await score("c-daily", p, { by: 1 });
    await api.get(`${base}/c-daily/players/p11`);
    await check("getSeasonalIdle", () => api.get(`${base}/c-daily/players/p11`));
    await api.get(`${base}/c-daily?limit=10`);
    await check("pageSeasonal", () => api.get(`${base}/c-daily?limit=10`));
    await api.get(`${base}/c-daily/seasons`);
    await check("seasons", () => api.get(`${base}/c-daily/seasons`));

    const ten = Array.from({ length: 10 }, (_, i) => `p${i}`);
    await api.post(`${base}/c-batch/rank`, { players: ten }, { key: "read" });
    await check("rank10", () => api.post(`${base}/c-batch/rank`, { players: ten }, { key: "read" }));
    const hundred = Array.from({ length: 100 }, (_, i) => `p${i}`);
    await check("rank100", () => api.post(`${base}/c-batch/rank`, { players: hundred }, { key: "read" }));
  });

  it("job leaderboards.snapshot: first run of the day, later runs", async () => {
    const a = createTestApi({ label: "costs-lb-snap", start: "2026-11-20T10:00:00.000Z" });
    try {
      const job = () => a.post("/internal/jobs/leaderboards.snapshot", undefined, admin);
      for (const p of Array.from({ length: 100 }, (_, i) => `p${i}`))
        await a.put(`${base}/snap/players/${p}`, { name: p, score: 1 });
      await job();
      a.setNow("2026-11-21T10:00:00.000Z");
      const first = await a.cost(job);
      expect(first.result.body.result, "snapshotBoard").toMatchObject({ snapshots: 1, members: 100, more: false });
      expect(costOf(first), "snapshotBoard").toEqual(expected(rows.snapshotBoard));
      const later = await a.cost(job);
      expect(later.result.body.result, "snapshotDone").toMatchObject({ alreadyDone: true });
      expect(costOf(later), "snapshotDone").toEqual(expected(rows.snapshotDone));
    } finally {
      await a.cleanup();
    }
  });

  it("daily board: removing a player of a kept season, its join again; seasons list and subset ranking with nothing ranked", async () => {
    const a = createTestApi({ label: "costs-lb-gone", start: "2026-11-20T10:00:00.000Z" });
    try {
      const measure = async (id: RowId, call: () => Promise<{ status: number }>, status: number) => {
        const measured = await a.cost(call);
        expect(measured.result.status, id).toBe(status);
        expect(costOf(measured), id).toEqual(expected(rows[id]));
      };
      await a.put(`${base}/gone`, { reset: "daily" }, admin);
      for (const p of ["a", "b", "c", "d"]) await a.put(`${base}/gone/players/${p}`, { name: p, score: 1 });
      a.setNow("2026-11-21T10:00:00.000Z");
      await a.del(`${base}/gone/players/c`);
      await measure("removeSeasonal", () => a.del(`${base}/gone/players/a`), 204);
      await a.put(`${base}/gone/players/c`, { name: "C" });
      await measure("joinAgainSeasonal", () => a.put(`${base}/gone/players/a`, { name: "A" }), 201);
      await a.put(`${base}/idle`, { reset: "daily", keepSeasons: 5 }, admin);
      await a.get(`${base}/idle/seasons`);
      await measure("seasonsNonePlayed", () => a.get(`${base}/idle/seasons`), 200);
      // b and d played yesterday only: today ranks none of the names
      await a.post(`${base}/gone/rank`, { players: ["b", "zz"] }, { key: "read" });
      await measure(
        "rankNoneRanked",
        () => a.post(`${base}/gone/rank`, { players: ["b", "d", "zz"] }, { key: "read" }),
        200,
      );
      await measure(
        "rankNoneJoined",
        () => a.post(`${base}/gone/rank`, { players: ["zz", "yy"] }, { key: "read" }),
        200,
      );
    } finally {
      await a.cleanup();
    }
  });

  it("remove a player (not last, last, missing) and delete a board", async () => {
    await join("c-remove", "a");
    await join("c-remove", "b");
    await api.del(`${base}/c-remove/players/zz`);
    await check("remove", () => api.del(`${base}/c-remove/players/a`), 204);
    await check("removeLast", () => api.del(`${base}/c-remove/players/b`), 204);
    await check("removeMissing", () => api.del(`${base}/c-remove/players/b`), 204);
    await api.del(`${base}/warm`, admin);
    await check("deleteBoard", () => api.del(`${base}/c-batch`, admin), 204);
  });
});
