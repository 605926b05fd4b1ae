/**
 * Review 8, periodic jobs in workerd (cron handler and POST /internal/jobs/{job} against the
 * local Upstash server): a late cron beside the next one, a missed day of leaderboard snapshots,
 * a build left half done at midnight, the job endpoint's scopes and repeated calls, and what the
 * cron handler does with an expression it does not know.
 */
import { afterAll, describe, expect, it } from "vitest";
import { CRON_JOBS, JOBS } from "../../functions/jobs.ts";
import { runScheduled } from "../../functions/scheduled.ts";
import { createTestApi } from "../helpers/worker.ts";

const at = (d: number, h: number, m = 0, s = 0) => Date.UTC(2026, 10, d, h, m, s);
type Row = { player: string; rank: number; previousRank: number | null };

function boardApi(label: string, start: number, vars: Record<string, string> = {}) {
  const api = createTestApi({ label, start, vars });
  const snapshot = () => api.post("/internal/jobs/leaderboards.snapshot", undefined, { key: "admin" });
  const rows = async (board: string): Promise<[string, number, number | null][]> =>
    (await api.get(`/v1/leaderboards/${board}?limit=100`)).body.items.map((r: Row) => [
      r.player,
      r.rank,
      r.previousRank,
    ]);
  const setScores = async (board: string, scores: number[]) => {
    for (const [i, score] of scores.entries()) {
      // joining again keeps the score: the change is a `set`
      expect([200, 201]).toContain(
        (await api.put(`/v1/leaderboards/${board}/players/p${i}`, { name: `p${i}` })).status,
      );
      const res = await api.post(`/v1/leaderboards/${board}/players/p${i}/score`, { set: score });
      expect(res.status).toBe(200);
    }
  };
  /** player → rank of the board's ranking now. */
  const ranks = async (board: string) => new Map((await rows(board)).map(([p, rank]) => [p, rank]));
  return { api, snapshot, rows, setScores, ranks };
}

describe("leaderboards.snapshot: a late hourly cron beside the next day's", () => {
  // Cloudflare may run a cron late: its scheduledTime is the time it was due, the job's clock.
  const b = boardApi("rv8-late", at(23, 0, 5));
  afterAll(() => b.api.cleanup());

  // FIXED (was medium, 2026-11-27: the list and step scripts never go back a day). Was: the snapshot job acts
  // for whatever day its clock names. The 23:05 cron of
  // Nov 22, run late after the 00:05 cron of Nov 23 has taken Nov 23's snapshot, sees
  // snapDay (2026-11-23) ≠ its day (2026-11-22) and copies the ranking again: today's snapshot is
  // replaced by the ranking of 00:30, and the state's day goes back to Nov 22, so the 01:05 run
  // takes a third copy. previousRank ("rank at the last daily snapshot", taken once per UTC day)
  // moves twice in the first hour of the day. Overlapping, the two runs also UNLINK each other's
  // `:snap:next` builds of a big board (each sees the other's day in snapBuild).
  // Smallest fix: never go back in time: snapshotListScript answers {done} when the state's day
  // is >= `day` (ids are ISO dates: string order), and snapshotStepScript takes a board only when
  // its snapDay (and snapBuild's day) is < `day`.
  it("does not replace today's snapshot with a later ranking, nor take a second one the same day", async () => {
    await b.setScores("lb", [50, 40, 30, 20, 10]); // p0 first ... p4 last
    await runScheduled("5 * * * *", at(23, 0, 5), b.api.env);
    const midnight = await b.ranks("lb");
    expect((await b.rows("lb")).every(([, rank, prev]) => rank === prev)).toBe(true);

    b.api.setNow(at(23, 0, 30));
    await b.setScores("lb", [10, 20, 30, 40, 50]); // the order reversed at 00:30
    // the 23:05 cron of yesterday, late (its scheduledTime), after today's pass was done
    const late = await runScheduled("5 * * * *", at(22, 23, 5), b.api.env);
    expect(late["leaderboards.snapshot"]).not.toHaveProperty("error");
    // the next hourly run of today
    await runScheduled("5 * * * *", at(23, 1, 5), b.api.env);
    b.api.setNow(at(23, 1, 10));
    for (const [player, , prev] of await b.rows("lb")) expect(prev, player).toBe(midnight.get(player));
  });
});

describe("leaderboards.snapshot: catching up after downtime", () => {
  // one chunk of 3 members a script, 2 scripts a run: a board of 8 takes several runs
  const b = boardApi("rv8-catch", at(22, 0, 5), { LEADERBOARD_SNAPSHOT_CHUNK: "3", LEADERBOARD_SNAPSHOT_SCRIPTS: "2" });
  afterAll(() => b.api.cleanup());
  const drainAt = async (time: number) => {
    const runs = [];
    for (let i = 0; i < 20; i++) {
      const r = await runScheduled("5 * * * *", time + i * 3_600_000, b.api.env);
      const result = r["leaderboards.snapshot"] as { more: boolean };
      runs.push(result);
      if (!result.more) return runs;
    }
    throw new Error("the snapshot never finished");
  };

  it("a missed day reads the last snapshot taken; a build left half done at midnight starts over and never mixes days", async () => {
    const first = [80, 70, 60, 50, 40, 30, 20, 10];
    await b.setScores("big", first);
    const runs = await drainAt(at(22, 0, 5));
    // 8 members in slices of 3: 3 steps plus the list scripts, 2 scripts a run
    expect(runs.length).toBeGreaterThan(1);
    expect(runs.slice(0, -1).every((r) => r.more)).toBe(true);
    const nov22 = await b.ranks("big");

    // Nov 23: the cron is down all day while the ranking changes; reads keep Nov 22's ranks
    b.api.setNow(at(23, 12));
    await b.setScores("big", [10, 20, 30, 40, 50, 60, 70, 80]);
    for (const [player, , prev] of await b.rows("big")) expect(prev, player).toBe(nov22.get(player));

    // Nov 23 23:05: the cron is back for one run that leaves the build half done (more: true)
    const late = await runScheduled("5 * * * *", at(23, 23, 5), b.api.env);
    expect(late["leaderboards.snapshot"]).toMatchObject({ day: "2026-11-23", more: true });
    for (const [player, , prev] of await b.rows("big")) expect(prev, player).toBe(nov22.get(player));

    // the ranking changes again before midnight; Nov 24's runs must start over, not finish Nov 23's slices
    b.api.setNow(at(23, 23, 30));
    await b.setScores("big", [15, 25, 35, 45, 55, 65, 75, 5]); // p6 first, p7 last
    b.api.setNow(at(24, 0, 5));
    const nov24Runs = await drainAt(at(24, 0, 5));
    expect(nov24Runs.at(-1)).toMatchObject({ day: "2026-11-24", more: false });
    b.api.setNow(at(24, 6));
    const rows = await b.rows("big");
    expect(rows.map(([p]) => p)).toEqual(["p6", "p5", "p4", "p3", "p2", "p1", "p0", "p7"]);
    for (const [player, rank, prev] of rows) expect(prev, player).toBe(rank);

    // later runs of the day do nothing (one script)
    const again = await runScheduled("5 * * * *", at(24, 7, 5), b.api.env);
    expect(again["leaderboards.snapshot"]).toMatchObject({ alreadyDone: true, snapshots: 0, members: 0, more: false });
  });
});

describe("POST /internal/jobs/{job}: scopes, names and repeated calls", () => {
  const b = boardApi("rv8-endpoint", at(22, 12, 30));
  afterAll(() => b.api.cleanup());

  it("a read, ingest, unknown or missing key runs no job and writes nothing", async () => {
    for (const key of ["read", "ingest", "none", "not-a-key-at-all-000"]) {
      for (const job of ["leaderboards.snapshot", "compact", "trim", "nope"]) {
        const res = await b.api.post(`/internal/jobs/${job}`, undefined, { key });
        expect([401, 403], `${key} ${job}`).toContain(res.status);
        expect(typeof res.body.error?.code, `${key} ${job}`).toBe("string");
        expect(res.body).not.toHaveProperty("result");
      }
    }
    // leaderboards.snapshot, run, would have written its pass state
    expect(await b.api.keys()).toEqual([]);
  });

  it("GET on a job is not a way to run it", async () => {
    const res = await b.api.get("/internal/jobs/leaderboards.snapshot", { key: "admin" });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(await b.api.keys()).toEqual([]);
  });

  it("an unknown job is a 404 naming every job, in the order of JOBS", async () => {
    const res = await b.api.post("/internal/jobs/snapshot", undefined, { key: "admin" });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("not_found");
    expect(res.body.error.message).toContain(Object.keys(JOBS).join(", "));
    expect(await b.api.keys()).toEqual([]);
  });

  it("repeated calls: the first does the day's snapshot, the rest say alreadyDone and change nothing", async () => {
    await b.setScores("rep", [3, 2, 1]);
    const first = await b.snapshot();
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ job: "leaderboards.snapshot", startedAt: b.api.now });
    expect(first.body.result).toMatchObject({ day: "2026-11-22", snapshots: 1, members: 3, more: false });
    const before = await b.rows("rep");
    await b.setScores("rep", [1, 2, 3]);
    const again = await Promise.all([b.snapshot(), b.snapshot(), b.snapshot()]);
    for (const r of again) expect(r.body.result).toMatchObject({ alreadyDone: true, snapshots: 0, members: 0 });
    const after = await b.rows("rep");
    // previousRank still the first call's ranks
    const prevOf = new Map(before.map(([p, , prev]) => [p, prev]));
    for (const [player, , prev] of after) expect(prev, player).toBe(prevOf.get(player));
  });

  it("sweep-counters called three times at once frees each bucket once and reports it once", async () => {
    for (const name of ["s1", "s2", "s3"])
      await b.api.post(`/v1/counters/${name}/incr`, {
        items: [
          { member: "a", by: 1, period: "day" },
          { member: "a", by: 1, period: "hour" },
          { member: "b", by: 1, period: "month" },
        ],
      });
    for (const name of ["s1", "s2", "s3"])
      expect((await b.api.del(`/v1/counters/${name}`, { key: "admin" })).status).toBe(204);
    const orphaned = (await b.api.keys()).filter((k) => /:counters:s\d:/.test(k) && /:(day|hour|month):/.test(k));
    expect(orphaned.length).toBeGreaterThan(0);
    const runs = await Promise.all(
      [1, 2, 3].map(() => b.api.post("/internal/jobs/sweep-counters", undefined, { key: "admin" })),
    );
    const deleted = runs.reduce((sum, r) => sum + (r.body.result.deleted as number), 0);
    expect(deleted).toBe(orphaned.length);
    for (const r of runs) expect(r.body.result.more).toBe(false);
    expect((await b.api.keys()).filter((k) => /:counters:s\d:/.test(k) && /:(day|hour|month):/.test(k))).toEqual([]);
  });
});

describe("the cron handler", () => {
  const api = createTestApi({ label: "rv8-cron", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());

  it("runs each expression's jobs in order, every job known; an unknown expression runs nothing and writes nothing", async () => {
    for (const names of Object.values(CRON_JOBS))
      for (const name of names) expect(Object.hasOwn(JOBS, name), name).toBe(true);
    // compaction runs before the job that reads what it trimmed; the presence trim before the peaks
    expect(CRON_JOBS["5 * * * *"]!.indexOf("compact")).toBeLessThan(
      CRON_JOBS["5 * * * *"]!.indexOf("webhooks.trending"),
    );
    expect(CRON_JOBS["* * * * *"]!.indexOf("trim")).toBeLessThan(CRON_JOBS["* * * * *"]!.indexOf("webhooks"));
    const hourly = await runScheduled("5 * * * *", at(22, 13, 5), api.env);
    expect(Object.keys(hourly)).toEqual(CRON_JOBS["5 * * * *"]);
    const minute = await runScheduled("* * * * *", at(22, 13, 6), api.env);
    expect(Object.keys(minute)).toEqual(CRON_JOBS["* * * * *"]);
    const before = await api.keys();
    for (const cron of ["0 * * * *", "*/5 * * * *", "", "5  * * * *"])
      expect(await runScheduled(cron, at(22, 13, 7), api.env)).toEqual({});
    expect(await api.keys()).toEqual(before);
  });
});
