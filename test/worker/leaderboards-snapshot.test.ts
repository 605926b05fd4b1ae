/**
 * Movement on boards without seasons: the daily snapshot job
 * (`leaderboards.snapshot`, src/leaderboards/jobs.ts) and the `previousRank`
 * that reads take from it.
 */
import { afterAll, describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;

const api = createTestApi({ label: "lb-snap", start: "2026-11-20T10:00:00.000Z" });
afterAll(() => api.cleanup());

const runJob = (a = api) => a.post("/internal/jobs/leaderboards.snapshot", undefined, admin);
const join = (board: string, player: string, score = 0, a = api) =>
  a.put(`${base}/${board}/players/${player}`, { name: player, score });
const score = (board: string, player: string, body: Record<string, unknown>, a = api) =>
  a.post(`${base}/${board}/players/${player}/score`, body);

describe("daily snapshot of boards without seasons", () => {
  it("previousRank is the rank at the snapshot, after later score changes; null before any snapshot and for players not in it", async () => {
    for (const [p, s] of [
      ["a", 30],
      ["b", 20],
      ["c", 10],
    ] as const)
      await join("snap1", p, s);
    // no snapshot yet
    expect((await api.get(`${base}/snap1/players/a`)).body.previousRank).toBeNull();
    expect((await api.get(`${base}/snap1`)).body.items.map((r: any) => r.previousRank)).toEqual([null, null, null]);

    const run = await runJob();
    expect(run.status).toBe(200);
    expect(run.body.result).toMatchObject({ day: "2026-11-20", more: false });
    expect(run.body.result.snapshots).toBeGreaterThanOrEqual(1);

    // c overtakes everyone, a newcomer d joins on top
    api.advance(3_600_000);
    await score("snap1", "c", { by: 100 });
    await join("snap1", "d", 1000);
    const page = (await api.get(`${base}/snap1`)).body.items;
    expect(page.map((r: any) => [r.player, r.rank, r.previousRank])).toEqual([
      ["d", 1, null],
      ["c", 2, 3],
      ["a", 3, 1],
      ["b", 4, 2],
    ]);
    expect((await api.get(`${base}/snap1/players/c`)).body).toMatchObject({ rank: 2, previousRank: 3, season: null });
    expect((await api.get(`${base}/snap1/players/d`)).body).toMatchObject({ rank: 1, previousRank: null });
    const around = (await api.get(`${base}/snap1/players/a/around?k=1`)).body.items;
    expect(around.map((r: any) => [r.player, r.previousRank])).toEqual([
      ["c", 3],
      ["a", 1],
      ["b", 2],
    ]);

    // the same day: nothing more is copied
    const again = await runJob();
    expect(again.body.result).toMatchObject({ alreadyDone: true, scripts: 1, members: 0, more: false });
    expect((await api.get(`${base}/snap1/players/c`)).body.previousRank).toBe(3);

    // the next UTC day's run takes a new snapshot: today's order becomes previous
    api.setNow("2026-11-21T00:05:00.000Z");
    const next = await runJob();
    expect(next.body.result).toMatchObject({ day: "2026-11-21", more: false });
    expect((await api.get(`${base}/snap1`)).body.items.map((r: any) => [r.player, r.previousRank])).toEqual([
      ["d", 1],
      ["c", 2],
      ["a", 3],
      ["b", 4],
    ]);
  });

  it("the second run of a day costs one script of two commands (EVALSHA, HMGET)", async () => {
    const a = createTestApi({ label: "lb-snap-cost", start: "2026-11-20T10:00:00.000Z" });
    try {
      await join("s", "p", 1, a);
      await runJob(a);
      await runJob(a);
      const m = await a.cost(() => runJob(a));
      expect(m.result.body.result).toMatchObject({ alreadyDone: true, scripts: 1 });
      expect({ requests: m.requests, commands: m.commands }).toEqual({ requests: 1, commands: 2 });
    } finally {
      await a.cleanup();
    }
  });

  it("seasonal boards are not snapshotted: previousRank stays the previous season's", async () => {
    await api.put(`${base}/snapd`, { reset: "daily" }, admin);
    await join("snapd", "x", 5);
    api.setNow("2026-11-22T10:00:00.000Z");
    await runJob();
    expect((await api.keys()).filter((k) => k.includes(":snapd:snap"))).toEqual([]);
    await score("snapd", "x", { by: 1 });
    expect((await api.get(`${base}/snapd/players/x`)).body).toMatchObject({
      rank: 1,
      previousRank: 1,
      season: "2026-11-22",
    });
  });

  it("a board of 25,000 players with a chunk of 4,000 completes over several scripts and runs, reporting more", async () => {
    const a = createTestApi({
      label: "lb-snap-big",
      start: "2026-11-20T10:00:00.000Z",
      vars: { LEADERBOARD_SNAPSHOT_CHUNK: "4000", LEADERBOARD_SNAPSHOT_SCRIPTS: "4" },
    });
    try {
      const n = 25_000;
      // configured by an admin (so listed), then filled in one EVAL: player p<i> with score i
      await a.put(`${base}/big`, {}, admin);
      await command(
        a.target,
        "EVAL",
        `for i = 0, tonumber(ARGV[1]) - 1 do
           local member = string.format('%015d', i + 1) .. ':p' .. i
           redis.call('ZADD', KEYS[1], -i, member)
           redis.call('HSET', KEYS[2], 'p' .. i, '1j:' .. member)
         end
         redis.call('HSET', KEYS[3], 'seq', ARGV[1])
         return 1`,
        3,
        `${a.prefix}:lb:big:ranking`,
        `${a.prefix}:lb:big:players`,
        `${a.prefix}:lb:big:settings`,
        n,
      );
      const runs: any[] = [];
      for (let r = 0; r < 10; r++) {
        const res = (await runJob(a)).body.result;
        runs.push(res);
        if (!res.more) break;
      }
      // 4 scripts per run (1 list + 3 steps of 4,000): 12,000 members per run, so three runs
      expect(runs.map((r) => [r.more, r.members])).toEqual([
        [true, 12_000],
        [true, 12_000],
        [false, 1_000],
      ]);
      expect(runs[2].snapshots).toBe(1);
      // rank at the snapshot: p24999 (score 24,999) first, p0 last
      await a.post(`${base}/big/scores`, { player: "p0", set: 1e9 });
      expect((await a.get(`${base}/big/players/p0`)).body).toMatchObject({ rank: 1, previousRank: n });
      expect((await a.get(`${base}/big/players/p24999`)).body).toMatchObject({ rank: 2, previousRank: 1 });
      expect((await a.get(`${base}/big/players/p12000`)).body.previousRank).toBe(n - 12_000);
      const page = (await a.get(`${base}/big?page=3&limit=5`)).body.items;
      expect(page.map((r: any) => r.previousRank)).toEqual([10, 11, 12, 13, 14]);
      // the build key is gone once renamed over the snapshot
      expect((await a.keys()).filter((k) => k.includes(":big:snap"))).toEqual([`${a.prefix}:lb:big:snap`]);
      expect((await runJob(a)).body.result).toMatchObject({ alreadyDone: true, scripts: 1 });
    } finally {
      await a.cleanup();
    }
  }, 240_000);

  it("deleting a board removes its snapshot keys, also a partial build; the last removal of a board made by joins too", async () => {
    const a = createTestApi({
      label: "lb-snap-del",
      start: "2026-11-20T10:00:00.000Z",
      vars: { LEADERBOARD_SNAPSHOT_CHUNK: "2", LEADERBOARD_SNAPSHOT_SCRIPTS: "2" },
    });
    try {
      for (const p of ["a", "b", "c"]) await join("gone", p, 1, a);
      await a.put(`${base}/gone`, {}, admin);
      // two scripts: list + one step of 2 members: a partial build
      expect((await runJob(a)).body.result).toMatchObject({ more: true, members: 2 });
      expect((await a.keys()).filter((k) => k.includes(":gone:snap"))).toEqual([`${a.prefix}:lb:gone:snap:next`]);
      await runJob(a);
      expect((await a.keys()).filter((k) => k.includes(":gone:snap"))).toEqual([`${a.prefix}:lb:gone:snap`]);
      // the next day's build is under way beside the finished snapshot
      a.setNow("2026-11-21T10:00:00.000Z");
      await runJob(a);
      expect((await a.keys()).filter((k) => k.includes(":gone:snap")).sort()).toEqual([
        `${a.prefix}:lb:gone:snap`,
        `${a.prefix}:lb:gone:snap:next`,
      ]);
      expect((await a.del(`${base}/gone`, admin)).status).toBe(204);
      expect((await a.keys()).filter((k) => k.includes(":gone"))).toEqual([]);

      a.setNow("2026-11-22T10:00:00.000Z");
      await join("implicit", "solo", 1, a);
      await runJob(a);
      expect((await a.keys()).filter((k) => k.includes(":implicit:snap"))).toEqual([`${a.prefix}:lb:implicit:snap`]);
      expect((await a.del(`${base}/implicit/players/solo`)).status).toBe(204);
      expect((await a.keys()).filter((k) => k.includes(":implicit"))).toEqual([]);
    } finally {
      await a.cleanup();
    }
  });

  it("keyed by player: a ties-reached player who took a new ranking member still reads the snapshot's rank", async () => {
    await api.put(`${base}/snapr`, { ties: "reached" }, admin);
    await join("snapr", "a", 2);
    await join("snapr", "b", 1);
    api.setNow("2026-11-23T10:00:00.000Z");
    await runJob();
    await score("snapr", "b", { by: 5 });
    expect((await api.get(`${base}/snapr/players/b`)).body).toMatchObject({ rank: 1, previousRank: 2 });
    expect((await api.get(`${base}/snapr`)).body.items.map((r: any) => [r.player, r.previousRank])).toEqual([
      ["b", 2],
      ["a", 1],
    ]);
  });

  it("many boards over runs with a small budget: the pass's cursor moves on, a board whose activity moves it is still done", async () => {
    const a = createTestApi({
      label: "lb-snap-many",
      start: "2026-11-20T10:00:00.000Z",
      vars: { LEADERBOARD_SNAPSHOT_CHUNK: "3", LEADERBOARD_SNAPSHOT_SCRIPTS: "3" },
    });
    try {
      const boards = ["m1", "m2", "m3", "m4", "m5"];
      for (const b of boards) {
        for (const p of ["x", "y"]) await join(b, p, p === "x" ? 2 : 1, a);
        a.advance(1000);
      }
      const first = (await runJob(a)).body.result;
      expect(first.more).toBe(true);
      // m1 (done) and m4 (not yet) gain a player: both move to the end of the registry, after the cursor
      await join("m1", "z", 9, a);
      await join("m4", "z", 9, a);
      const results = [first];
      for (let r = 0; r < 10 && results[results.length - 1].more; r++) results.push((await runJob(a)).body.result);
      expect(results[results.length - 1].more).toBe(false);
      expect(results.map((r) => r.members).reduce((x, y) => x + y)).toBe(11);
      for (const b of ["m1", "m2", "m3", "m5"])
        expect((await a.get(`${base}/${b}/players/x`)).body.previousRank, b).toBe(1);
      // m4 was copied after its newcomer joined; m1 before (and is not copied twice in a day)
      expect((await a.get(`${base}/m4/players/z`)).body.previousRank).toBe(1);
      expect((await a.get(`${base}/m4/players/x`)).body.previousRank).toBe(2);
      expect((await a.get(`${base}/m1/players/z`)).body.previousRank).toBeNull();
      expect((await runJob(a)).body.result).toMatchObject({ alreadyDone: true });
    } finally {
      await a.cleanup();
    }
  });

  it("attack: only an admin key (or a QStash signature) runs the snapshot job", async () => {
    for (const key of ["ingest", "read"] as const) {
      expect((await api.post("/internal/jobs/leaderboards.snapshot", undefined, { key })).status).toBe(403);
    }
  });
});
