/**
 * Review 5, races through the Worker app in workerd against the local Upstash server: one
 * Idempotency-Key sent at once with different bodies and from different API keys, parallel
 * first-touch writes to new names, and the jobs (compaction, sweep, snapshot, trim) running
 * beside writes and beside each other. Assertions are totals read afterwards, never timings.
 */
import { afterAll, describe, expect, it } from "vitest";
import { TEST_INGEST_KEY_2 } from "../helpers/keys.ts";
import { createIngestApi } from "../helpers/ingest.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const at = (d: number, h: number, m = 0) => Date.UTC(2026, 10, d, h, m);
let serial = 0;
const fresh = (label: string) => `rv5-${label}-${Date.now()}-${++serial}`;

describe("one Idempotency-Key racing with different bodies", () => {
  const api = createTestApi({ label: "rv5-idem-bodies" });
  afterAll(() => api.cleanup());

  it("counter: 20 copies with 20 bodies at once apply one body; the other 19 are 409 idempotency_key_reused", async () => {
    const key = fresh("bodies");
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post("/v1/counters/rv5b/incr", { member: "m", by: i + 1 }, { headers: { "idempotency-key": key } }),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    const conflicts = answers.filter((a) => a.status === 409);
    expect(conflicts).toHaveLength(19);
    for (const c of conflicts) expect(c.body.error.code).toBe("idempotency_key_reused");
    const score = (await api.get("/v1/counters/rv5b/members/m")).body.score;
    expect(score).toBeGreaterThanOrEqual(1);
    expect(score).toBeLessThanOrEqual(20);
    // the one applied body is the one whose retry replays
    const replay = await api.post(
      "/v1/counters/rv5b/incr",
      { member: "m", by: score },
      { headers: { "idempotency-key": key } },
    );
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(ok[0]?.body);
    expect((await api.get("/v1/counters/rv5b/members/m")).body.score).toBe(score);
  });

  it("trending (record written up front): 20 copies with 20 bodies apply one body, 19 are 409", async () => {
    const key = fresh("tbodies");
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post("/v1/trending/rv5b/events", { member: "a", count: i + 1 }, { headers: { "idempotency-key": key } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200 || a.status === 202)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(19);
    const count = (await api.get("/v1/trending/rv5b/members/a?window=24h")).body.count;
    expect(count).toBeGreaterThanOrEqual(1);
    expect(count).toBeLessThanOrEqual(20);
  });
});

describe("one Idempotency-Key racing from two API keys", () => {
  const api = createTestApi({ label: "rv5-idem-callers" });
  afterAll(() => api.cleanup());

  it("counter: 10 copies from each of two keys at once apply exactly twice; each key's answers are equal", async () => {
    const key = fresh("callers");
    const send = (k: string) =>
      api.post("/v1/counters/rv5c/incr", { member: "m", by: 3 }, { key: k, headers: { "idempotency-key": key } });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send(i % 2 === 0 ? "ingest" : TEST_INGEST_KEY_2)),
    );
    for (const a of answers) expect(a.status).toBe(200);
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") !== "true")).toHaveLength(2);
    for (const parity of [0, 1]) {
      const mine = answers.filter((_, i) => i % 2 === parity);
      expect(mine.filter((a) => a.headers.get("idempotent-replayed") !== "true")).toHaveLength(1);
      for (const a of mine) expect(a.body).toEqual(mine[0]?.body);
    }
    expect((await api.get("/v1/counters/rv5c/members/m")).body.score).toBe(6);
  });

  it("leaderboard score: 10 copies from each of two keys at once add the step exactly twice", async () => {
    expect((await api.put("/v1/leaderboards/rv5c/players/p1", { name: "P1" }, { key: "admin" })).status).toBe(201);
    const key = fresh("lb");
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post(
          "/v1/leaderboards/rv5c/players/p1/score",
          { by: 7 },
          { key: i % 2 === 0 ? "ingest" : TEST_INGEST_KEY_2, headers: { "idempotency-key": key } },
        ),
      ),
    );
    for (const a of answers) expect(a.status).toBe(200);
    expect((await api.get("/v1/leaderboards/rv5c/players/p1")).body.score).toBe(14);
  });
});

describe("parallel first-touch writes to new names", () => {
  const api = createTestApi({ label: "rv5-first" });
  afterAll(() => api.cleanup());

  it("30 parallel first increments of 30 new counters: every counter is listed once with its total", async () => {
    const names = Array.from({ length: 30 }, (_, i) => `fresh${i}`);
    const answers = await Promise.all(
      names.flatMap((n) => [1, 2].map((by) => api.post(`/v1/counters/${n}/incr`, { member: "m", by }))),
    );
    for (const a of answers) expect(a.status).toBe(200);
    for (const n of names) expect((await api.get(`/v1/counters/${n}/members/m`)).body.score).toBe(3);
  });

  it("30 players joining a new leaderboard at once: total 30, every player found", async () => {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api.put(`/v1/leaderboards/rv5new/players/p${i}`, { name: `P${i}`, score: i }),
      ),
    );
    for (const a of answers) expect(a.status).toBe(201);
    const board = await api.get("/v1/leaderboards/rv5new?limit=100");
    expect(board.body.total).toBe(30);
  });

  it("20 parallel first heartbeats of one new room count every id once", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => api.post("/v1/presence/rv5room/heartbeats", { ids: [`u${i}`, "shared"] })),
    );
    for (const a of answers) expect(a.status).toBe(200);
    expect((await api.get("/v1/presence/rv5room")).body.online).toBe(21);
  });
});

describe("jobs running beside writes and beside each other", () => {
  const api = createTestApi({ label: "rv5-jobs", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());
  const job = (name: string) => api.post(`/internal/jobs/${name}`, undefined, { key: "admin" });

  it("counter increments racing sweep-counters and each other's jobs: the total is exact", async () => {
    const writes = Array.from({ length: 40 }, (_, i) =>
      api.post("/v1/counters/rv5j/incr", { member: `m${i % 4}`, by: i + 1 }),
    );
    const jobs = ["sweep-counters", "compact", "sweep-counters", "leaderboards.snapshot", "trim"].map(job);
    const answers = await Promise.all([...writes, ...jobs]);
    for (const a of answers) expect(a.status).toBe(200);
    let total = 0;
    for (let m = 0; m < 4; m++) {
      const expected = Array.from({ length: 40 }, (_, i) => i + 1)
        .filter((x) => (x - 1) % 4 === m)
        .reduce((s, x) => s + x, 0);
      const score = (await api.get(`/v1/counters/rv5j/members/m${m}`)).body.score;
      expect({ m, score }).toEqual({ m, score: expected });
      total += score;
    }
    expect(total).toBe(820);
  });

  it("trending events racing compaction (several runs at once): the 24h count is exact", async () => {
    // hours of history first, so compaction has buckets to fold
    for (let h = 0; h < 4; h++) {
      api.setNow(at(22, 8 + h, 10));
      expect((await api.post("/v1/trending/rv5t/events", { member: "a", count: 5 })).status).toBe(200);
    }
    api.setNow(at(22, 13, 5));
    const writes = Array.from({ length: 30 }, () => api.post("/v1/trending/rv5t/events", { member: "a", count: 2 }));
    const answers = await Promise.all([...writes, job("compact"), job("compact"), job("compact")]);
    for (const a of answers) expect(a.status).toBe(200);
    const read = await api.get("/v1/trending/rv5t/members/a?window=24h");
    expect(read.body.count).toBe(20 + 60);
  });

  it("leaderboard scores racing snapshots: every step lands once", async () => {
    api.setNow(at(22, 14));
    for (const p of ["p1", "p2"])
      expect((await api.put(`/v1/leaderboards/rv5s/players/${p}`, { name: p })).status).toBe(201);
    const writes = Array.from({ length: 30 }, (_, i) =>
      api.post(`/v1/leaderboards/rv5s/players/${i % 2 ? "p1" : "p2"}/score`, { by: 1 }),
    );
    const answers = await Promise.all([...writes, job("leaderboards.snapshot"), job("leaderboards.snapshot")]);
    for (const a of answers) expect(a.status).toBe(200);
    expect((await api.get("/v1/leaderboards/rv5s/players/p1")).body.score).toBe(15);
    expect((await api.get("/v1/leaderboards/rv5s/players/p2")).body.score).toBe(15);
  });

  it("histogram observations racing every hourly job: the count and sum are exact", async () => {
    expect((await api.put("/v1/histograms/rv5h", { bucketWidth: 1 }, { key: "admin" })).status).toBe(201);
    const writes = Array.from({ length: 30 }, (_, i) => api.post("/v1/histograms/rv5h/observations", { value: i % 5 }));
    const answers = await Promise.all([
      ...writes,
      ...["compact", "sweep-counters", "leaderboards.snapshot", "trim", "webhooks"].map(job),
    ]);
    for (const a of answers) expect(a.status).toBe(200);
    const h = (await api.get("/v1/histograms/rv5h")).body;
    expect(h.count).toBe(30);
    expect(h.sum).toBe(6 * (0 + 1 + 2 + 3 + 4));
  });
});

describe("parallel writes across period and day boundaries", () => {
  const api = createTestApi({ label: "rv5-periods", start: at(23, 0, 2) });
  afterAll(() => api.cleanup());

  it("counter: 40 parallel period=hour increments either side of midnight add up by hour, by day and over both", async () => {
    const times = ["2026-11-22T23:59:59.000Z", "2026-11-23T00:00:00.000Z"];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        api.post("/v1/counters/rv5p/incr", { member: "m", by: i + 1, period: "hour", at: times[i % 2] }),
      ),
    );
    for (const a of answers) expect(a.status).toBe(200);
    const odd = Array.from({ length: 20 }, (_, k) => 2 * k + 1).reduce((s, x) => s + x, 0); // i even: by odd
    const even = 820 - odd;
    const read = async (from: string, to: string) =>
      (await api.get(`/v1/counters/rv5p/members/m?period=hour&from=${from}&to=${to}`)).body.score;
    expect(await read("2026-11-22T23:00:00Z", "2026-11-22T23:00:00Z")).toBe(odd);
    expect(await read("2026-11-23T00:00:00Z", "2026-11-23T00:00:00Z")).toBe(even);
    expect(await read("2026-11-22T00:00:00Z", "2026-11-23T23:00:00Z")).toBe(820);
  });

  it("histogram: 30 parallel observations either side of midnight count once in the range", async () => {
    expect((await api.put("/v1/histograms/rv5ph", { bucketWidth: 1 }, { key: "admin" })).status).toBe(201);
    const times = ["2026-11-22T23:59:59.000Z", "2026-11-23T00:00:01.000Z"];
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api.post("/v1/histograms/rv5ph/observations", { value: i % 3, at: times[i % 2] }),
      ),
    );
    for (const a of answers) expect(a.status).toBe(200);
    const h = (await api.get("/v1/histograms/rv5ph?from=2026-11-22&to=2026-11-23")).body;
    expect(h.count).toBe(30);
    expect(h.sum).toBe(30);
  });

  it("counter ttl: 20 parallel first writes with 20 ttls leave the key living at least the largest, at most it plus a tenth", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post("/v1/counters/rv5ttl/incr", { member: `m${i}`, ttl: 1000 * (i + 1) }, { key: "admin" }),
      ),
    );
    for (const a of answers) expect(a.status).toBe(200);
    const keys = (await api.keys()).filter((k) => k.includes("rv5ttl") && !k.includes(":idem:"));
    expect(keys.length).toBeGreaterThan(0);
    const counterKey = keys.find((k) => k.endsWith(":rv5ttl")) ?? keys[0] ?? "";
    expect(await command<number>(api.target, "ZCARD", counterKey)).toBe(20);
    const ttl = await command<number>(api.target, "TTL", counterKey);
    expect(ttl).toBeGreaterThanOrEqual(20_000 - 60);
    expect(ttl).toBeLessThanOrEqual(22_000);
  });
});

describe("queued (Prefer: respond-async) races", () => {
  const api = createIngestApi({ label: "rv5-async", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());
  const count = async (stream: string, member: string) =>
    (await api.get(`/v1/trending/${stream}/members/${member}?window=24h`)).body.count;

  it("one Idempotency-Key from two API keys, 8 copies each, delivered by two consumers at once: applied exactly twice", async () => {
    const headers = { ...api.asyncHeaders, "idempotency-key": fresh("async2") };
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        api.post(
          "/v1/trending/rv5q/events",
          { member: "a", count: 3 },
          { headers, key: i % 2 === 0 ? "ingest" : TEST_INGEST_KEY_2 },
        ),
      ),
    );
    for (const a of answers) expect(a.status).toBe(202);
    const sent = api.queue.sent.splice(0);
    const [x, y] = await Promise.all([api.deliver(sent), api.deliver([...sent].reverse())]);
    expect(x.stats.applied + y.stats.applied).toBe(2);
    // a third, late redelivery of everything changes nothing
    await api.deliver(sent, { attempts: 2 });
    expect(await count("rv5q", "a")).toBe(6);
  });

  it("queued increments racing synchronous ones and a compaction run: the total is exact", async () => {
    const asyncAnswers = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.post("/v1/trending/rv5q2/events", { member: "b", count: 2 }, { headers: api.asyncHeaders }),
      ),
    );
    for (const a of asyncAnswers) expect(a.status).toBe(202);
    const sent = api.queue.sent.splice(0);
    const results = await Promise.all([
      api.deliver(sent),
      ...Array.from({ length: 10 }, () => api.post("/v1/trending/rv5q2/events", { member: "b", count: 1 })),
      api.post("/internal/jobs/compact", undefined, { key: "admin" }),
    ]);
    for (const r of results.slice(1) as { status: number }[]) expect(r.status).toBe(200);
    expect(await count("rv5q2", "b")).toBe(30);
  });
});

describe("more races: batches whole, definitions, deletes of other members, new ids", () => {
  const api = createTestApi({ label: "rv5-more", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());

  it("10 batches with one bad item racing 10 good batches: only the good ones land, the bad are 400", async () => {
    const good = { items: [{ member: "g", by: 2 }, { member: "h" }] };
    const bad = {
      items: [
        { member: "g", by: 2 },
        { member: "h", by: "x" },
      ],
    };
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => api.post("/v1/counters/rv5w/incr", i % 2 ? bad : good)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(10).fill(200), ...Array(10).fill(400)]);
    expect((await api.get("/v1/counters/rv5w/members/g")).body.score).toBe(20);
    expect((await api.get("/v1/counters/rv5w/members/h")).body.score).toBe(10);
  });

  it("observations racing the histogram's first definition: every 200 is counted, every other answer is a 404", async () => {
    const answers = await Promise.all([
      ...Array.from({ length: 15 }, () => api.post("/v1/histograms/rv5def/observations", { values: [1, 2] })),
      api.put("/v1/histograms/rv5def", { bucketWidth: 1 }, { key: "admin" }),
      ...Array.from({ length: 15 }, () => api.post("/v1/histograms/rv5def/observations", { values: [1, 2] })),
    ]);
    const obs = answers.filter((_, i) => i !== 15);
    expect(answers[15]?.status).toBe(201);
    for (const a of obs) expect([200, 404]).toContain(a.status);
    const accepted = obs.filter((a) => a.status === 200).reduce((n, a) => n + a.body.accepted, 0);
    expect((await api.get("/v1/histograms/rv5def")).body.count).toBe(accepted);
  });

  it("deleting one member racing increments of others never touches the others' totals", async () => {
    await api.post("/v1/counters/rv5d/incr", { member: "gone", by: 100 });
    const answers = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => api.post("/v1/counters/rv5d/incr", { member: `k${i % 2}`, by: 3 })),
      api.del("/v1/counters/rv5d/members/gone"),
      api.del("/v1/counters/rv5d/members/gone"),
    ]);
    expect(answers.map((a) => a.status).filter((s) => s !== 200)).toEqual([204, 204]);
    expect((await api.get("/v1/counters/rv5d/members/k0")).body.score).toBe(30);
    expect((await api.get("/v1/counters/rv5d/members/k1")).body.score).toBe(30);
    expect((await api.get("/v1/counters/rv5d/members/gone")).status).toBe(404);
  });

  it("20 racing heartbeats of one new id: exactly one answer calls it new, and newToday is 1", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => api.post("/v1/presence/rv5new/heartbeats", { id: "solo" })),
    );
    for (const a of answers) expect(a.status).toBe(200);
    expect(answers.reduce((n, a) => n + (a.body.new as number), 0)).toBe(1);
    const room = (await api.get("/v1/presence/rv5new")).body;
    expect({ online: room.online, newToday: room.newToday, activeToday: room.activeToday }).toEqual({
      online: 1,
      newToday: 1,
      activeToday: 1,
    });
  });

  it("heartbeats racing the minute trim (several runs): online and activeToday are exact", async () => {
    const answers = await Promise.all([
      ...Array.from({ length: 25 }, (_, i) => api.post("/v1/presence/rv5trim/heartbeats", { ids: [`u${i}`] })),
      ...[0, 1, 2].map(() => api.post("/internal/jobs/trim", undefined, { key: "admin" })),
    ]);
    for (const a of answers) expect(a.status).toBe(200);
    const room = (await api.get("/v1/presence/rv5trim")).body;
    expect({ online: room.online, activeToday: room.activeToday, newToday: room.newToday }).toEqual({
      online: 25,
      activeToday: 25,
      newToday: 25,
    });
  });

  it("a leaderboard join with one Idempotency-Key and 10 names at once: one 201, nine 409, one player", async () => {
    const key = fresh("join");
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api.put("/v1/leaderboards/rv5j/players/p1", { name: `N${i}` }, { headers: { "idempotency-key": key } }),
      ),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(9);
    expect((await api.get("/v1/leaderboards/rv5j?limit=100")).body.total).toBe(1);
  });
});

describe("races across a month boundary and on the up-front idempotency record", () => {
  const api = createTestApi({ label: "rv5-month", start: "2026-12-01T00:02:00Z" });
  afterAll(() => api.cleanup());

  it("histogram: 40 parallel observations either side of the month's end count once in each month and over both", async () => {
    expect((await api.put("/v1/histograms/rv5m", { bucketWidth: 1 }, { key: "admin" })).status).toBe(201);
    const times = ["2026-11-30T23:59:59.000Z", "2026-12-01T00:00:00.000Z"];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        api.post("/v1/histograms/rv5m/observations", { values: [{ value: i % 4, at: times[i % 2] }] }),
      ),
    );
    for (const a of answers) expect(a.status).toBe(200);
    const nov = (await api.get("/v1/histograms/rv5m?from=2026-11-01&to=2026-11-30")).body;
    const dec = (await api.get("/v1/histograms/rv5m?from=2026-12-01&to=2026-12-01")).body;
    const both = (await api.get("/v1/histograms/rv5m?from=2026-10-15&to=2026-12-01")).body;
    // i even: values 0, 2 (November); i odd: 1, 3 (December)
    expect({ n: nov.count, s: nov.sum }).toEqual({ n: 20, s: 20 });
    expect({ n: dec.count, s: dec.sum }).toEqual({ n: 20, s: 40 });
    expect({ n: both.count, s: both.sum }).toEqual({ n: 40, s: 60 });
  });

  it("counter: parallel period=day increments either side of the month's end, read by day and by month", async () => {
    const times = ["2026-11-30T23:59:59Z", "2026-12-01T00:00:00Z"];
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post("/v1/counters/rv5m/incr", { member: "m", by: 1 + (i % 2), period: "day", at: times[i % 2] }),
      ),
    );
    for (const a of answers) expect(a.status).toBe(200);
    const read = async (q: string) => (await api.get(`/v1/counters/rv5m/members/m?${q}`)).body.score;
    expect(await read("period=day&from=2026-11-30&to=2026-11-30")).toBe(10);
    expect(await read("period=day&from=2026-12-01&to=2026-12-01")).toBe(20);
    expect(await read("period=day&from=2026-10-01&to=2026-12-01")).toBe(30);
  });

  it("trending: one Idempotency-Key from two API keys at once, 10 copies each: counted exactly twice", async () => {
    const key = fresh("trend2");
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post(
          "/v1/trending/rv5t2/events",
          { member: "a", count: 4 },
          { key: i % 2 ? TEST_INGEST_KEY_2 : "ingest", headers: { "idempotency-key": key } },
        ),
      ),
    );
    for (const a of answers) expect(a.status).toBe(200);
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") !== "true")).toHaveLength(2);
    expect((await api.get("/v1/trending/rv5t2/members/a?window=24h")).body.count).toBe(8);
  });
});

describe("racing creations: exactly one 'created'", () => {
  const api = createTestApi({ label: "rv5-create", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());

  it("20 joins of one new player at once: one 201 created, nineteen 200, one player", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => api.put("/v1/leaderboards/rv5cr/players/p1", { name: "P1", score: 5 })),
    );
    expect(answers.filter((a) => a.status === 201 && a.body.created === true)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200 && a.body.created === false)).toHaveLength(19);
    const board = (await api.get("/v1/leaderboards/rv5cr?limit=100")).body;
    expect(board.total).toBe(1);
    expect((await api.get("/v1/leaderboards/rv5cr/players/p1")).body.score).toBe(5);
  });

  it("20 definitions of one new histogram at once: one 201 created, nineteen 200", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => api.put("/v1/histograms/rv5cr", { bucketWidth: 1 }, { key: "admin" })),
    );
    expect(answers.filter((a) => a.status === 201 && a.body.created === true)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200 && a.body.created === false)).toHaveLength(19);
    const createdAt = new Set(answers.map((a) => a.body.createdAt));
    expect(createdAt.size).toBe(1);
  });
});
