/**
 * Review 3, background jobs in workerd: the cron handler and POST
 * /internal/jobs/{job} against the local Upstash server. Idle runs cost a
 * fixed few commands; a cron run, an admin call and a QStash call at once
 * trim each hour once; a replayed QStash message changes nothing; missed
 * hours are caught up; the minute trim leaves reads as they were and drops a
 * room gone quiet.
 */
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, describe, expect, it } from "vitest";
import worker from "../../functions/index.ts";
import { JOBS } from "../../functions/jobs.ts";
import { runScheduled } from "../../functions/scheduled.ts";
import { TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { command } from "../helpers/upstash-rest.ts";
import { signQstash } from "../helpers/qstash-sign.ts";
import { createTestApi } from "../helpers/worker.ts";

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (d: number, h: number, m = 0, s = 0) => Date.UTC(2026, 10, d, h, m, s);

async function fire(env: Env, cron: string, time: number) {
  const ctx = createExecutionContext();
  worker.scheduled(createScheduledController({ cron, scheduledTime: time }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** A QStash `Upstash-Signature` for POST /internal/jobs/{job} with an empty body (real clock: the check uses it). */
function qstashSignature(job: string): Promise<string> {
  return signQstash(TEST_SIGNING_KEYS.current, { url: `http://localhost/internal/jobs/${job}` });
}

describe("a job run with nothing to do", () => {
  const api = createTestApi({ label: "rv3-idle", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());

  it("costs one round trip of 2 commands (docs/costs.md: compaction, trim, webhooks)", async () => {
    for (const job of ["compact", "trim", "webhooks"]) {
      // the first call of a fresh isolate also loads the script (NOSCRIPT, then EVAL): warm it
      await api.post(`/internal/jobs/${job}`, undefined, { key: "admin" });
      const { result, requests, commands } = await api.cost(() =>
        api.post(`/internal/jobs/${job}`, undefined, { key: "admin" }),
      );
      expect(result.status, job).toBe(200);
      expect({ job, requests, commands }).toEqual({ job, requests: 1, commands: 2 });
    }
  });

  it("every job's idle run is one round trip, and the same on a second run", async () => {
    for (const job of ["sweep-counters", "leaderboards.snapshot", "webhooks.trending"]) {
      await api.post(`/internal/jobs/${job}`, undefined, { key: "admin" });
      const a = await api.cost(() => api.post(`/internal/jobs/${job}`, undefined, { key: "admin" }));
      const b = await api.cost(() => api.post(`/internal/jobs/${job}`, undefined, { key: "admin" }));
      expect(a.result.status, job).toBe(200);
      expect(a.requests, job).toBe(1);
      expect(a.commands, job).toBeLessThanOrEqual(2);
      expect(b.commands, job).toBe(a.commands);
    }
    // an idle run writes nothing but the snapshot job's own state (its day's pass is done)
    expect(await api.keys()).toEqual([`${api.prefix}:lb:_snap`]);
  });

  it("an idle minute cron (trim + webhooks) is 2 round trips and 4 commands, every minute", async () => {
    for (let m = 1; m <= 3; m++) {
      const t = api.now + m * MIN;
      const { requests, commands } = await api.cost(() => runScheduled("* * * * *", t, api.env));
      expect({ requests, commands }).toEqual({ requests: 2, commands: 4 });
    }
  });
});

describe("compaction runs at once: cron, admin call and QStash call", () => {
  const api = createTestApi({ label: "rv3-overlap", start: at(22, 9, 30), vars: { TRENDING_KEEP: "2" } });
  afterAll(() => api.cleanup());

  it("trims each of 3 missed hours once; the window's maxError is the sum of the cuts, not more", async () => {
    // hours 9, 10, 11: 5 members each, counts 10 + h, 8, 6, 4, 2; keep 2 → cut 6 (the 3rd) per hour
    for (const h of [9, 10, 11]) {
      api.setNow(at(22, h, 30));
      const events = [10 + h, 8, 6, 4, 2].map((count, i) => ({ member: `h${h}m${i}`, count }));
      await api.post("/v1/trending/s/events", { events: [...events, { member: "all", count: 3 }] });
    }
    const now = at(22, 12, 5);
    api.setNow(now);
    const exactTop = (await api.get("/v1/trending/s/top?n=3")).body;
    expect(exactTop.exact).toBe(true);
    const signature = await qstashSignature("compact");
    const [cron, admin, signed] = await Promise.all([
      runScheduled("5 * * * *", now, api.env) as Promise<{ compact: Record<string, number> }>,
      api.post("/internal/jobs/compact", undefined, { key: "admin" }),
      api.post("/internal/jobs/compact", undefined, { key: "none", headers: { "upstash-signature": signature } }),
    ]);
    expect(admin.status).toBe(200);
    expect(signed.status).toBe(200);
    const results = [cron.compact, admin.body.result, signed.body.result];
    const sum = (k: string) => results.reduce((s, r) => s + Number(r[k] ?? 0), 0);
    expect(sum("streams")).toBe(1);
    expect(sum("hoursTrimmed")).toBe(3);
    expect(sum("membersRemoved")).toBe(3 * 4); // 6 members an hour, keep 2
    const top = (await api.get("/v1/trending/s/top?n=3")).body;
    // The top read above built this hour's union while hours 9-11 were raw (hour 11 left out, "\0p");
    // compaction completed it with the trimmed hour 11 only (cut 6), so hours 9 and 10 stay exact in it.
    expect(top.maxError).toBe(6);
    expect(top.items).toEqual(exactTop.items);

    // a replayed QStash message (same signature, within its lifetime) is answered and runs nothing
    // (review 20: it ran the job again, as often as it was sent)
    const replay = await api.post("/internal/jobs/compact", undefined, {
      key: "none",
      headers: { "upstash-signature": signature },
    });
    expect(replay.status).toBe(200);
    expect(replay.body.result).toEqual({ replayed: true });
    // a fresh signature (QStash's next delivery) runs the job, which finds nothing to do
    const next = await api.post("/internal/jobs/compact", undefined, {
      key: "none",
      headers: { "upstash-signature": await qstashSignature("compact") },
    });
    expect(next.body.result).toMatchObject({ streams: 0, hoursTrimmed: 0, membersRemoved: 0, more: false });
    expect((await api.get("/v1/trending/s/top?n=3")).body.maxError).toBe(6);
    // the next hour's union is built from the three trimmed hours: three cuts of 6, counted once each
    api.setNow(at(22, 13, 1));
    expect((await api.get("/v1/trending/s/top?n=3&window=4h")).body.maxError).toBe(18);
    api.setNow(now);
  });

  it("history keeps each hour's own bound after overlapping runs", async () => {
    const h = (await api.get("/v1/trending/s/history?member=all&hours=3")).body;
    // 'all' (3) was the 5th of 6 in each hour: trimmed out, each hour bounded by its own cut
    expect(h.points.slice(0, 3)).toEqual([9, 10, 11].map((x) => ({ hour: at(22, x), count: 0, maxError: 6 })));
    expect(h.exact).toBe(false);
  });
});

describe("catching up a day of missed compactions through the cron", () => {
  const api = createTestApi({ label: "rv3-catch", start: at(20, 0, 30), vars: { TRENDING_KEEP: "3" } });
  afterAll(() => api.cleanup());

  it("one cron run catches up 24 hours; reads before it are exact and after it within maxError", async () => {
    const truth = new Map<string, number>();
    for (let h = 0; h < 24; h++) {
      api.setNow(at(20, h, 30));
      const events = Array.from({ length: 6 }, (_, i) => ({ member: `m${i}`, count: 1 + ((i * 5 + h) % 7) }));
      for (const e of events) truth.set(e.member, (truth.get(e.member) ?? 0) + e.count);
      await api.post("/v1/trending/day/events", { events });
    }
    api.setNow(at(21, 0, 5));
    const before = (await api.get("/v1/trending/day/top?n=6")).body;
    expect(before.exact).toBe(true);
    expect(before.items.map((i: { member: string; count: number }) => [i.member, i.count])).toEqual(
      [...truth.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([m, c]) => [m, c]),
    );
    const results = (await runScheduled("5 * * * *", at(21, 0, 5), api.env)) as { compact: Record<string, unknown> };
    expect(results.compact).toMatchObject({ streams: 1, hoursTrimmed: 24, membersRemoved: 24 * 3, more: false });
    const after = (await api.get("/v1/trending/day/top?n=6")).body;
    for (const item of after.items as { member: string; count: number }[]) {
      const real = truth.get(item.member) ?? 0;
      expect(item.count).toBeLessThanOrEqual(real);
      expect(item.count + after.maxError).toBeGreaterThanOrEqual(real);
    }
    const again = (await runScheduled("5 * * * *", at(21, 0, 6), api.env)) as { compact: Record<string, unknown> };
    expect(again.compact).toMatchObject({ streams: 0, hoursTrimmed: 0, more: false });
  });
});

describe("the minute trim", () => {
  const api = createTestApi({
    label: "rv3-trim",
    start: at(22, 12, 0),
    vars: { PRESENCE_TIMEOUT_SECONDS: "60" },
  });
  afterAll(() => api.cleanup());

  it("leaves the room's figures as they were, and forgets idle ids from the member list at the timeout", async () => {
    await api.post("/v1/presence/hall/heartbeats", { ids: ["a", "b", "c"] });
    api.advance(30_000);
    await api.post("/v1/presence/hall/heartbeats", { id: "c" });
    api.advance(31_000); // a, b: 61 s idle; c: 31 s
    const before = (await api.get("/v1/presence/hall")).body;
    expect(before).toMatchObject({ online: 1, peakToday: 3, activeToday: 3 });
    await fire(api.env, "* * * * *", api.now);
    expect((await api.get("/v1/presence/hall")).body).toEqual(before);
    const members = (await api.get("/v1/presence/hall/members")).body.members.map((m: { id: string }) => m.id);
    expect(members).toEqual(["c"]);
  });

  it("a room with no activity leaves the room list two days later; past the id horizon no key lives forever", async () => {
    expect((await api.get("/v1/presence")).body.rooms).toContain("hall");
    const start = api.now;
    const runUntil = async (end: number) => {
      for (let t = api.now + MIN; t <= end; t += 3 * HOUR) {
        api.setNow(t);
        await fire(api.env, "* * * * *", t);
      }
      api.setNow(end);
      await fire(api.env, "* * * * *", end);
    };
    await runUntil(start + 2 * DAY - 10 * MIN);
    expect((await api.get("/v1/presence")).body.rooms).toContain("hall");
    await runUntil(start + 2 * DAY + 10 * MIN);
    expect((await api.get("/v1/presence")).body.rooms).not.toContain("hall");
    // the id map stays until the horizon (90 days: NU needs it); every other key has a deadline
    const persistent = async () => {
      const out: string[] = [];
      for (const k of (await api.keys()).filter((key) => key.includes(":hall:")))
        if ((await command<number>(api.target, "PTTL", k)) < 0) out.push(k.slice(api.prefix.length));
      return out.sort();
    };
    expect(await persistent()).toEqual([":presence:hall:ids", ":presence:hall:seen", ":presence:hall:seq"]);
    // Redis TTLs run on the real clock, so only keys without one can outlive the fake 91 days
    await runUntil(start + 91 * DAY);
    expect(await persistent()).toEqual([]);
  });
});

describe("the minute trim run twice at once (cron + QStash retry) or replayed", () => {
  const vars = { PRESENCE_TIMEOUT_SECONDS: "60" };
  const start = at(22, 23, 59, 20); // the run after midnight also writes yesterday's record
  const control = createTestApi({ label: "rv3-trim-ctl", start, vars });
  const twice = createTestApi({ label: "rv3-trim-two", start, vars });
  afterAll(() => Promise.all([control.cleanup(), twice.cleanup()]));

  it("ends with the same figures, history and past days as one run", async () => {
    for (const api of [control, twice]) {
      await api.post("/v1/presence/r1/heartbeats", { ids: ["a", "b", "c"] });
      await api.post("/v1/presence/r2/heartbeats", { ids: ["x"] });
      api.setNow(at(23, 0, 0, 30));
      await api.post("/v1/presence/r1/heartbeats", { id: "a" });
    }
    const now = at(23, 0, 0, 40);
    control.setNow(now);
    twice.setNow(now);
    await fire(control.env, "* * * * *", now);
    const signature = await qstashSignature("trim");
    const [, signed] = await Promise.all([
      fire(twice.env, "* * * * *", now),
      twice.post("/internal/jobs/trim", undefined, { key: "none", headers: { "upstash-signature": signature } }),
    ]);
    expect(signed.status).toBe(200);
    // the same QStash message delivered again
    expect(
      (await twice.post("/internal/jobs/trim", undefined, { key: "none", headers: { "upstash-signature": signature } }))
        .status,
    ).toBe(200);
    for (const path of [
      "/v1/presence/r1",
      "/v1/presence/r2",
      "/v1/presence/r1/history",
      "/v1/presence/r2/history",
      "/v1/presence/r1?day=2026-11-22",
      "/v1/presence/_total",
      "/v1/presence",
    ]) {
      const [a, b] = await Promise.all([control.get(path), twice.get(path)]);
      expect(b.status, path).toBe(200);
      expect(b.body, path).toEqual(a.body);
    }
  });
});

describe("job names", () => {
  const api = createTestApi({ label: "rv3-names" });
  afterAll(() => api.cleanup());

  it("an inherited property or an odd path is a 404 naming the jobs, and runs nothing", async () => {
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty", "COMPACT", "compact%00"]) {
      const res = await api.post(`/internal/jobs/${name}`, undefined, { key: "admin" });
      expect(res.status, name).toBe(404);
      expect(res.body.error.code, name).toBe("not_found");
      expect(res.body.error.message, name).toContain("compact");
    }
    expect(await api.keys()).toEqual([]);
  });
});

describe("TRENDING_KEEP = 0 (never trim)", () => {
  const api = createTestApi({ label: "rv3-keep0", start: at(22, 10, 30), vars: { TRENDING_KEEP: "0" } });
  afterAll(() => api.cleanup());

  it("compaction removes nothing and the answers stay exact and unchanged", async () => {
    await api.post("/v1/trending/k/events", {
      events: Array.from({ length: 30 }, (_, i) => ({ member: `m${i}`, count: 1 + (i % 4) })),
    });
    api.setNow(at(22, 11, 5));
    const before = await api.get("/v1/trending/k/top?n=20");
    const job = await api.post("/internal/jobs/compact", undefined, { key: "admin" });
    expect(job.body.result).toMatchObject({ streams: 1, hoursTrimmed: 0, membersRemoved: 0, more: false });
    const after = await api.get("/v1/trending/k/top?n=20");
    const { generatedAt: _a, ...a } = before.body;
    const { generatedAt: _b, ...b } = after.body;
    expect(b).toEqual(a);
    expect(b.exact).toBe(true);
  });
});

describe("sweep-counters after deletes", () => {
  const api = createTestApi({ label: "rv3-sweep", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());
  const sweep = () => api.post("/internal/jobs/sweep-counters", undefined, { key: "admin" });
  const bucketKeys = async (name: string) =>
    (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:counters:${name}:`) && /:(day|hour):/.test(k));

  it("frees the old life's buckets and never a bucket the counter's new life wrote", async () => {
    for (const name of ["gone", "reborn"])
      await api.post(`/v1/counters/${name}/incr`, {
        items: [
          { member: "a", by: 5, period: "day" },
          { member: "a", by: 5, period: "hour" },
        ],
      });
    expect((await bucketKeys("gone")).length).toBeGreaterThan(0);
    for (const name of ["gone", "reborn"])
      expect((await api.del(`/v1/counters/${name}`, { key: "admin" })).status).toBe(204);
    // the new life writes the same day's and hour's buckets before the sweep runs
    await api.post("/v1/counters/reborn/incr", {
      items: [
        { member: "a", by: 2, period: "day" },
        { member: "b", by: 1, period: "hour" },
      ],
    });
    const [a, b] = await Promise.all([sweep(), sweep()]); // two overlapping runs
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(await bucketKeys("gone")).toEqual([]);
    const day = await api.get("/v1/counters/reborn/members/a?period=day");
    expect(day.body.score).toBe(2);
    const hour = await api.get("/v1/counters/reborn/top?period=hour");
    expect(hour.body.items.map((i: { member: string; score: number }) => [i.member, i.score])).toEqual([["b", 1]]);
    // nothing left to do
    expect((await sweep()).body.result).toMatchObject({ checked: 0, deleted: 0 });
  });
});

describe("the job endpoint's OpenAPI description", () => {
  const api = createTestApi({ label: "rv3-openapi" });
  afterAll(() => api.cleanup());

  // FIXED (was low, docs): POST /internal/jobs/{job} was documented (functions/routes/jobs.ts, in
  // /openapi.json) as "compact | trim | sweep-counters | leaderboards.snapshot", without the two
  // webhooks jobs that route accepts (`webhooks`, `webhooks.trending`; README and docs/webhooks.md
  // tell operators to call them), and says `compact` "precomputes window unions", which it no
  // longer does since issue 15 (docs/trending.md: "It builds no other union"). A QStash schedule
  // set up from the OpenAPI document misses the webhooks jobs. Fix: build the summary from
  // Object.keys(JOBS) and say compaction completes the unions reads built.
  it("names every job the route runs, and does not claim compaction precomputes unions", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    const op = doc.paths["/internal/jobs/{job}"].post;
    const text = `${op.summary} ${op.description}`;
    for (const job of Object.keys(JOBS)) expect(text, job).toContain(job);
    expect(text).not.toContain("precomputes window unions");
  });
});

describe("leaderboards.snapshot: overlapping capped runs", () => {
  const vars = { LEADERBOARD_SNAPSHOT_CHUNK: "7", LEADERBOARD_SNAPSHOT_SCRIPTS: "3" };
  const start = at(22, 10, 0);
  const control = createTestApi({ label: "rv3-snap-ctl", start, vars });
  const busy = createTestApi({ label: "rv3-snap-two", start, vars });
  afterAll(() => Promise.all([control.cleanup(), busy.cleanup()]));
  const run = (a: typeof control) => a.post("/internal/jobs/leaderboards.snapshot", undefined, { key: "admin" });

  it("end with the same previousRank for every player as one run after another", async () => {
    for (const a of [control, busy])
      for (const board of ["b1", "b2", "b3"])
        for (let i = 0; i < 20; i++)
          await a.put(`/v1/leaderboards/${board}/players/p${i}`, { name: `p${i}`, score: (i * 37) % 23 });
    const drain = async (a: typeof control, parallel: number) => {
      for (let round = 0; round < 40; round++) {
        const results = await Promise.all(Array.from({ length: parallel }, () => run(a)));
        for (const r of results) expect(r.status).toBe(200);
        if (results.every((r) => r.body.result.more === false)) return round;
      }
      throw new Error("never finished");
    };
    await drain(control, 1);
    await drain(busy, 3);
    for (const board of ["b1", "b2", "b3"]) {
      const rows = async (a: typeof control) =>
        (await a.get(`/v1/leaderboards/${board}?limit=100`)).body.items.map(
          (r: { player: string; rank: number; previousRank: number | null }) => [r.player, r.rank, r.previousRank],
        );
      const want = await rows(control);
      expect(want.every(([, rank, prev]: [string, number, number]) => rank === prev)).toBe(true);
      expect(await rows(busy)).toEqual(want);
    }
  });
});
