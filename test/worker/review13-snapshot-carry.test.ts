/**
 * Review 13 #3, fixed: a board whose daily snapshot needs more steps than a day's runs pay no
 * longer restarts its build each new day. The build under way goes on across the day change and
 * completes as the snapshot of the day it started; then today's starts (src/leaderboards/jobs.ts,
 * snapshotStepScript).
 */
import { afterAll, describe, expect, it } from "vitest";
import { inParallel } from "../helpers/job-budget.ts";
import { createTestApi } from "../helpers/worker.ts";

const admin = { key: "admin" };
const DAY = 86_400_000;
const day0 = Date.UTC(2026, 10, 22);

describe("a snapshot build longer than a day's runs", () => {
  // 60 players at chunk 1: 61 steps (the last finds the ranking copied); 25 scripts a call, one call a day
  const api = createTestApi({
    label: "rv13-snapcarry",
    start: day0 + 10_000,
    vars: { LEADERBOARD_SNAPSHOT_CHUNK: "1", LEADERBOARD_SNAPSHOT_SCRIPTS: "25" },
  });
  afterAll(() => api.cleanup());

  it("goes on across the day change, completes as its own day's snapshot, then today's starts", async () => {
    expect((await api.put("/v1/leaderboards/big", undefined, admin)).status).toBeLessThan(300);
    const players = Array.from({ length: 60 }, (_, i) => `p${String(i).padStart(2, "0")}`);
    await inParallel(players, 20, async (p) => {
      expect((await api.put(`/v1/leaderboards/big/players/${p}`, { name: p })).status).toBeLessThan(300);
      expect((await api.post(`/v1/leaderboards/big/players/${p}/score`, { by: 100 - Number(p.slice(1)) })).status).toBe(
        200,
      );
    });
    const runs: Record<string, unknown>[] = [];
    for (let d = 0; d < 3; d++) {
      api.setNow(day0 + d * DAY + 5 * 60_000);
      const res = await api.post("/internal/jobs/leaderboards.snapshot", undefined, admin);
      expect(res.status).toBe(200);
      runs.push(res.body.result as Record<string, unknown>);
    }
    console.log("snapshot across days:", runs);
    // day 0 and day 1: 24 and 25 steps of day 0's build (before the fix day 1 restarted it)
    expect(runs.map((r) => r.snapshots)).toEqual([0, 0, 1]);
    expect(runs.every((r) => r.more === true)).toBe(true);
    // the snapshot is day 0's ranking: p00 first
    expect((await api.get("/v1/leaderboards/big/players/p00")).body).toMatchObject({ rank: 1, previousRank: 1 });
    expect((await api.get("/v1/leaderboards/big/players/p59")).body).toMatchObject({ previousRank: 60 });
  });
});
