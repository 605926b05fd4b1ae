/**
 * Review 5, concurrency through the Worker app in workerd: truly parallel requests
 * (Promise.all) against the local Upstash server. What test/worker/idempotency.test.ts does
 * not race: one Idempotency-Key with many different bodies at once, two API keys sending
 * the same key at once, first touches of new counters / histograms / boards / rooms at
 * once (across an hour boundary, with `at` per request), and the jobs running beside writes
 * and beside each other. Every assertion is a total or a state, never a timing.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { TEST_INGEST_KEY_2 } from "../helpers/keys.ts";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll, createTestApi, type TestApi, type TestResponse } from "../helpers/worker.ts";

const at = (d: number, h: number, m = 0, s = 0, ms = 0) => Date.UTC(2026, 10, d, h, m, s, ms);
let serial = 0;
const freshKey = (label: string) => `${label}-${Date.now()}-${++serial}`;
const replayed = (r: TestResponse) => r.headers.get("idempotent-replayed") === "true";

describe("one Idempotency-Key, many bodies at once", () => {
  const api = createTestApi({ label: "rv5r-idem", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());
  const score = async (counter: string, member: string) =>
    (await api.get(`/v1/counters/${counter}/members/${member}`)).body.score ?? 0;

  it("20 different bodies under one key at once: one applies, the 19 others are 409 and write nothing", async () => {
    const key = freshKey("bodies");
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post("/v1/counters/bodies/incr", { member: "m", by: i + 1 }, { headers: { "idempotency-key": key } }),
      ),
    );
    const applied = results.filter((r) => r.status === 200);
    expect(applied).toHaveLength(1);
    expect(replayed(applied[0]!)).toBe(false);
    const conflicts = results.filter((r) => r.status === 409);
    expect(conflicts).toHaveLength(19);
    for (const r of conflicts) expect(r.body.error.code).toBe("idempotency_key_reused");
    const winner = applied[0]!.body.results[0].score as number;
    expect(await score("bodies", "m")).toBe(winner);
    expect((await api.keys()).filter((k) => k.startsWith(`${api.prefix}:idem:`))).toHaveLength(1);
  });

  it("10 copies of body A and 10 of body B interleaved: one body applies once, its copies replay it, the other body's are all 409", async () => {
    const key = freshKey("ab");
    const bodies = [
      { member: "a", by: 3 },
      { member: "b", by: 7 },
    ];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post("/v1/counters/ab/incr", bodies[i % 2], { headers: { "idempotency-key": key } }),
      ),
    );
    const fresh = results.filter((r) => r.status === 200 && !replayed(r));
    expect(fresh).toHaveLength(1);
    const winner = fresh[0]!.body.results[0].member as "a" | "b";
    results.forEach((r, i) => {
      const mine = bodies[i % 2]!.member;
      if (mine === winner) {
        expect(r.status).toBe(200);
        expect(r.body).toEqual(fresh[0]!.body);
      } else {
        expect(r.status).toBe(409);
      }
    });
    expect(await score("ab", "a")).toBe(winner === "a" ? 3 : 0);
    expect(await score("ab", "b")).toBe(winner === "b" ? 7 : 0);
  });

  it("two API keys racing the same key and body (10 copies each): two writes, one per API key, each key's copies agree", async () => {
    const key = freshKey("two-keys");
    const callers = ["ingest", TEST_INGEST_KEY_2];
    const sends = Array.from({ length: 20 }, (_, i) => callers[i % 2]!);
    const results = await Promise.all(
      sends.map((k) =>
        api.post("/v1/counters/two/incr", { member: "m", by: 4 }, { key: k, headers: { "idempotency-key": key } }),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    for (const caller of callers) {
      const mine = results.filter((_, i) => sends[i] === caller);
      expect(mine.filter((r) => !replayed(r))).toHaveLength(1);
      const first = mine.find((r) => !replayed(r))!;
      for (const r of mine) expect(r.body).toEqual(first.body);
    }
    // the two applications: 4 then 8, in either order
    const firsts = results.filter((r) => !replayed(r)).map((r) => r.body.results[0].score as number);
    expect(firsts.sort((a, b) => a - b)).toEqual([4, 8]);
    expect(await score("two", "m")).toBe(8);
  });

  it("two API keys racing the same key with different bodies: both apply once, neither is a 409", async () => {
    const key = freshKey("two-bodies");
    const sends = Array.from({ length: 20 }, (_, i) =>
      i % 2 === 0
        ? { k: "ingest", body: { member: "x", by: 2 } }
        : { k: TEST_INGEST_KEY_2, body: { member: "y", by: 9 } },
    );
    const results = await Promise.all(
      sends.map((s) => api.post("/v1/counters/twob/incr", s.body, { key: s.k, headers: { "idempotency-key": key } })),
    );
    for (const r of results) expect(r.status).toBe(200);
    expect(results.filter((r) => !replayed(r))).toHaveLength(2);
    expect(await score("twob", "x")).toBe(2);
    expect(await score("twob", "y")).toBe(9);
  });

  it("20 copies of one key on a 1,000-item batch at once: applied once; the 19 replays are marked summaries", async () => {
    const key = freshKey("big");
    const items = Array.from({ length: 1000 }, (_, i) => ({ member: `m${i % 50}`, by: 1 }));
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.post("/v1/counters/bigrace/incr", { items }, { headers: { "idempotency-key": key } }),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    const fresh = results.filter((r) => !replayed(r));
    expect(fresh).toHaveLength(1);
    expect(fresh[0]!.body.results).toHaveLength(1000);
    for (const r of results.filter(replayed)) {
      expect(r.headers.get("idempotent-summarised")).toBe("true");
      expect(r.body.summary.items).toBe(1000);
    }
    expect(await score("bigrace", "m7")).toBe(20);
  });

  it("20 copies of one key on a histogram's observations (result recorded up front) apply once", async () => {
    expect((await api.put("/v1/histograms/idem-race", { bucketWidth: 1 }, { key: "admin" })).status).toBeLessThan(300);
    const key = freshKey("hist");
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.post(
          "/v1/histograms/idem-race/observations",
          { values: [1, 2, 3] },
          { headers: { "idempotency-key": key } },
        ),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    expect(results.filter((r) => !replayed(r))).toHaveLength(1);
    for (const r of results) expect(r.body).toEqual({ accepted: 3 });
    expect((await api.get("/v1/histograms/idem-race")).body.count).toBe(3);
  });
});

describe("keyed copies racing the write that makes them valid", () => {
  const api = createTestApi({ label: "rv5r-valid", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());

  it("20 keyed observations racing the histogram's PUT: each a 404 or the one write (or its replay), never a replay of a refusal", async () => {
    // the define and observe scripts loaded beforehand, so the PUT races for real
    await api.put("/v1/histograms/warm", { bucketWidth: 1 }, { key: "admin" });
    await api.post("/v1/histograms/warm/observations", { value: 1 });
    const key = freshKey("hist-valid");
    const send = () =>
      api.post("/v1/histograms/late/observations", { values: [1, 2, 3] }, { headers: { "idempotency-key": key } });
    const results = await Promise.all([
      ...Array.from({ length: 10 }, send),
      api.put("/v1/histograms/late", { bucketWidth: 1 }, { key: "admin" }),
      ...Array.from({ length: 10 }, send),
    ]);
    const observations = results.filter((_, i) => i !== 10);
    for (const r of observations) expect([200, 404]).toContain(r.status);
    const ok = observations.filter((r) => r.status === 200);
    const fresh = ok.filter((r) => !replayed(r));
    expect(fresh.length).toBeLessThanOrEqual(1);
    // a replay exists only if the write it replays happened
    if (ok.length > 0) expect(fresh).toHaveLength(1);
    for (const r of ok) expect(r.body).toEqual({ accepted: 3 });
    expect((await api.get("/v1/histograms/late")).body.count).toBe(3 * fresh.length);
    // a retry now: the replay of the one write, or (if every copy was refused) the write itself
    const retry = await send();
    expect(retry.status).toBe(200);
    expect(replayed(retry)).toBe(fresh.length === 1);
    expect((await api.get("/v1/histograms/late")).body.count).toBe(3);
  });

  it("20 keyed score changes racing the player's join: each a 404 or the one change (or its replay)", async () => {
    await api.put("/v1/leaderboards/late/players/warm", { name: "W" });
    await api.post("/v1/leaderboards/late/players/warm/score", { by: 1 });
    const key = freshKey("lb-valid");
    const send = () =>
      api.post("/v1/leaderboards/late/players/p/score", { by: 7 }, { headers: { "idempotency-key": key } });
    const results = await Promise.all([
      ...Array.from({ length: 10 }, send),
      api.put("/v1/leaderboards/late/players/p", { name: "P" }),
      ...Array.from({ length: 10 }, send),
    ]);
    expect(results[10]!.status).toBe(201);
    const changes = results.filter((_, i) => i !== 10);
    for (const r of changes) expect([200, 404]).toContain(r.status);
    const ok = changes.filter((r) => r.status === 200);
    const fresh = ok.filter((r) => !replayed(r));
    expect(fresh.length).toBeLessThanOrEqual(1);
    if (ok.length > 0) expect(fresh).toHaveLength(1);
    for (const r of ok) expect(r.body).toEqual(fresh[0]!.body);
    expect((await api.get("/v1/leaderboards/late/players/p")).body.score).toBe(7 * fresh.length);
  });
});

describe("first touches at once", () => {
  const api = createTestApi({ label: "rv5r-first", start: at(22, 0, 0, 30) });
  afterAll(() => api.cleanup());

  it("40 increments of a new hourly counter with a ttl, straddling midnight: exact per hour, per day, per month, listed once, every key expires", async () => {
    const ttl = 7200;
    const sends = Array.from({ length: 40 }, (_, i) => ({
      member: `m${i % 4}`,
      by: (i % 5) + 1,
      period: "hour",
      at: i % 2 === 0 ? at(21, 23, 59, 59, 999) : at(22, 0),
      ttl,
    }));
    const results = await Promise.all(sends.map((s) => api.post("/v1/counters/fresh/incr", s)));
    for (const r of results) expect(r.status).toBe(200);
    const expected = (filter: (s: (typeof sends)[number]) => boolean, member: string) =>
      sends.filter((s) => filter(s) && s.member === member).reduce((sum, s) => sum + s.by, 0);
    const read = async (member: string, from: string, to: string) =>
      (await api.get(`/v1/counters/fresh/members/${member}?period=hour&from=${from}&to=${to}`)).body.score ?? 0;
    const before = (s: (typeof sends)[number]) => s.at < at(22, 0);
    for (let m = 0; m < 4; m++) {
      const member = `m${m}`;
      // single hours, the two days in hours (day and quarter-day rollups), both days, the month (its rollup)
      expect({
        member,
        h23: await read(member, "2026-11-21T23:00:00Z", "2026-11-21T23:00:00Z"),
        h00: await read(member, "2026-11-22T00:00:00Z", "2026-11-22T00:00:00Z"),
        day21: await read(member, "2026-11-21T00:00:00Z", "2026-11-21T23:00:00Z"),
        day22: await read(member, "2026-11-22T00:00:00Z", "2026-11-22T23:00:00Z"),
        across: await read(member, "2026-11-21T18:00:00Z", "2026-11-22T05:00:00Z"),
        month: await read(member, "2026-11-01T00:00:00Z", "2026-11-30T23:00:00Z"),
      }).toEqual({
        member,
        h23: expected(before, member),
        h00: expected((s) => !before(s), member),
        day21: expected(before, member),
        day22: expected((s) => !before(s), member),
        across: expected(() => true, member),
        month: expected(() => true, member),
      });
    }
    const listed = (await api.get("/v1/counters?limit=1000")).body.counters as string[];
    expect(listed.filter((c) => c === "fresh")).toHaveLength(1);
    const keys = (await api.keys()).filter((k) => k.includes(":fresh"));
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) {
      const t = await command<number>(api.target, "TTL", k);
      // the bucket gets the ttl; a rollup at most its bucket's plus the extension slack (docs/counters.md)
      expect({ k, ok: t > 0 && t <= ttl + 3600 }).toEqual({ k, ok: true });
    }
  });

  it("30 parallel observations of a new histogram straddling midnight: exact count, min, max", async () => {
    expect((await api.put("/v1/histograms/fresh", { bucketWidth: 1 }, { key: "admin" })).status).toBeLessThan(300);
    const values = Array.from({ length: 30 }, (_, i) => i + 1);
    const results = await Promise.all(
      values.map((v, i) =>
        api.post("/v1/histograms/fresh/observations", {
          value: v,
          at: i % 2 === 0 ? at(21, 23, 59, 59, 999) : at(22, 0),
        }),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    const all = (await api.get("/v1/histograms/fresh?from=2026-11-21&to=2026-11-22")).body;
    expect({ count: all.count, min: all.min, max: all.max }).toEqual({ count: 30, min: 1, max: 30 });
    const day21 = (await api.get("/v1/histograms/fresh?from=2026-11-21&to=2026-11-21")).body;
    const day22 = (await api.get("/v1/histograms/fresh")).body;
    // odd values (even index) went to the 21st, even values to the 22nd
    expect([day21.count, day21.min, day21.max, day22.count, day22.min, day22.max]).toEqual([15, 1, 29, 15, 2, 30]);
    const sum = (all.buckets as { count: number }[]).reduce((s, b) => s + b.count, 0);
    expect(sum).toBe(30);
  });

  it("30 players join a new board at once, each then scored 5 times at once: 30 players, exact scores, 30 distinct ranks", async () => {
    const players = Array.from({ length: 30 }, (_, i) => `p${i}`);
    const joins = await Promise.all(players.map((p) => api.put(`/v1/leaderboards/fresh/players/${p}`, { name: p })));
    for (const r of joins) expect(r.status).toBe(201);
    // the same player joining again at once: 200 each, the score is never reset
    const rejoins = await Promise.all(
      Array.from({ length: 10 }, () => api.put("/v1/leaderboards/fresh/players/p0", { name: "P0", score: 999 })),
    );
    for (const r of rejoins) expect(r.status).toBe(200);
    const scored = await Promise.all(
      players.flatMap((p, i) =>
        Array.from({ length: 5 }, () => api.post(`/v1/leaderboards/fresh/players/${p}/score`, { by: i + 1 })),
      ),
    );
    for (const r of scored) expect(r.status).toBe(200);
    const page = (await api.get("/v1/leaderboards/fresh?limit=100")).body;
    expect(page.total).toBe(30);
    const byPlayer = Object.fromEntries(
      (page.items as { player: string; score: number }[]).map((x) => [x.player, x.score]),
    );
    expect(byPlayer).toEqual(Object.fromEntries(players.map((p, i) => [p, 5 * (i + 1)])));
    expect(new Set((page.items as { rank: number }[]).map((x) => x.rank)).size).toBe(30);
  });

  it("ties 'reached': 10 players reaching the same score at once rank in the order their changes applied, as each answer said", async () => {
    expect((await api.put("/v1/leaderboards/reached", { ties: "reached" }, { key: "admin" })).status).toBeLessThan(300);
    const players = Array.from({ length: 10 }, (_, i) => `r${i}`);
    for (const p of players)
      expect((await api.put(`/v1/leaderboards/reached/players/${p}`, { name: p })).status).toBe(201);
    const answers = await Promise.all(
      players.map((p) => api.post(`/v1/leaderboards/reached/players/${p}/score`, { by: 5 })),
    );
    for (const r of answers) expect(r.status).toBe(200);
    // each answer's rank is its order of application: 1..10, once each
    expect(answers.map((r) => r.body.rank as number).sort((a, b) => a - b)).toEqual(players.map((_, i) => i + 1));
    const page = (await api.get("/v1/leaderboards/reached?limit=100")).body;
    const finalRank = Object.fromEntries(
      (page.items as { player: string; rank: number }[]).map((x) => [x.player, x.rank]),
    );
    expect(finalRank).toEqual(Object.fromEntries(players.map((p, i) => [p, answers[i]!.body.rank])));
  });

  it("20 joins of one new player at once, with a score: one 201, nineteen 200, the score set once", async () => {
    const joins = await Promise.all(
      Array.from({ length: 20 }, () => api.put("/v1/leaderboards/once/players/p", { name: "P", score: 5 })),
    );
    expect(joins.filter((r) => r.status === 201)).toHaveLength(1);
    expect(joins.filter((r) => r.status === 200)).toHaveLength(19);
    expect((await api.get("/v1/leaderboards/once/players/p")).body.score).toBe(5);
    expect((await api.get("/v1/leaderboards/once?limit=100")).body.total).toBe(1);
  });

  it("20 'best' sets at once: the best of them stays, whatever the order", async () => {
    await api.put("/v1/leaderboards/best/players/p", { name: "P" });
    const sets = Array.from({ length: 20 }, (_, i) => ((i * 7) % 20) + 1);
    const answers = await Promise.all(
      sets.map((set) => api.post("/v1/leaderboards/best/players/p/score", { set, mode: "best" })),
    );
    for (const r of answers) expect(r.status).toBe(200);
    // each answer is at least its own set, and the final is the maximum
    answers.forEach((r, i) => expect(r.body.score).toBeGreaterThanOrEqual(sets[i]!));
    expect((await api.get("/v1/leaderboards/best/players/p")).body.score).toBe(20);
  });

  it("a new room: 40 parallel heartbeats of 20 ids (each twice) count 20 online, new today 20", async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `u${i}`);
    const results = await Promise.all([...ids, ...ids].map((id) => api.post("/v1/presence/fresh/heartbeats", { id })));
    for (const r of results) expect(r.status).toBe(200);
    const room = (await api.get("/v1/presence/fresh")).body;
    expect({ online: room.online, activeToday: room.activeToday, newToday: room.newToday }).toEqual({
      online: 20,
      activeToday: 20,
      newToday: 20,
    });
  });
});

describe("a histogram's width changed while observations race", () => {
  const api = createTestApi({ label: "rv5r-width", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());

  it("PUT width 10 racing 20 observations of 2.5 on an empty width-1 histogram: the stored buckets are all of the final width", async () => {
    await api.put("/v1/histograms/warm", { bucketWidth: 1 }, { key: "admin" });
    await api.put("/v1/histograms/warm", { bucketWidth: 2 }, { key: "admin" });
    await api.post("/v1/histograms/warm/observations", { value: 1 });
    expect((await api.put("/v1/histograms/w", { bucketWidth: 1 }, { key: "admin" })).status).toBe(201);
    const observe = () => api.post("/v1/histograms/w/observations", { value: 2.5 });
    const results = await Promise.all([
      api.put("/v1/histograms/w", { bucketWidth: 10 }, { key: "admin" }),
      ...Array.from({ length: 20 }, observe),
    ]);
    const put = results[0]!;
    expect([200, 409]).toContain(put.status);
    const observations = results.slice(1);
    for (const r of observations) expect(r.status).toBe(200);
    const width = put.status === 200 ? 10 : 1;
    const settings = (await api.get("/v1/histograms/w")).body;
    expect(settings.bucketWidth).toBe(width);
    for (const query of ["", "?from=2026-10-01&to=2026-11-22"]) {
      const h = (await api.get(`/v1/histograms/w${query}`)).body;
      expect({ query, count: h.count, buckets: h.buckets }).toEqual({
        query,
        count: 20,
        buckets: [{ lower: width === 10 ? 0 : 2, upper: width === 10 ? 10 : 3, count: 20 }],
      });
    }
  });
});

describe("jobs beside writes and beside each other", () => {
  const api = createTestApi({ label: "rv5r-jobs", start: at(22, 14, 5) });
  afterAll(() => api.cleanup());
  const job = (name: string) => api.post(`/internal/jobs/${name}`, undefined, { key: "admin" });

  it("every job twice at once, beside writes to each feature: every write counted once, every job answers 200", async () => {
    await api.put("/v1/leaderboards/jobs/players/p", { name: "P" });
    await api.put("/v1/histograms/jobs", { bucketWidth: 1 }, { key: "admin" });
    const writes = [
      ...Array.from({ length: 20 }, () => api.post("/v1/counters/jobs/incr", { member: "m", by: 2 })),
      ...Array.from({ length: 20 }, () => api.post("/v1/trending/jobs/events", { member: "t", count: 3 })),
      ...Array.from({ length: 20 }, (_, i) => api.post("/v1/presence/jobs/heartbeats", { id: `u${i}` })),
      ...Array.from({ length: 20 }, () => api.post("/v1/leaderboards/jobs/players/p/score", { by: 5 })),
      ...Array.from({ length: 20 }, (_, i) => api.post("/v1/histograms/jobs/observations", { value: i })),
    ];
    const jobs = ["compact", "trim", "sweep-counters", "leaderboards.snapshot"].flatMap((n) => [job(n), job(n)]);
    const results = await Promise.all([...writes, ...jobs]);
    for (const r of results) expect(r.status).toBe(200);
    // and once more after the writes, each job alone
    for (const n of ["compact", "trim", "sweep-counters", "leaderboards.snapshot"])
      expect((await job(n)).status).toBe(200);
    expect((await api.get("/v1/counters/jobs/members/m")).body.score).toBe(40);
    expect((await api.get("/v1/trending/jobs/members/t?window=24h")).body.count).toBe(60);
    expect((await api.get("/v1/presence/jobs")).body.online).toBe(20);
    expect((await api.get("/v1/leaderboards/jobs/players/p")).body.score).toBe(100);
    expect((await api.get("/v1/histograms/jobs")).body.count).toBe(20);
  });

  it("a counter deleted, then written again while the sweep runs 3 times at once: the new life keeps every increment", async () => {
    const items = (by: number) => ({
      items: [
        { member: "a", by, period: "hour", at: at(22, 13, 30) },
        { member: "a", by, period: "day", at: at(22, 13, 30) },
        { member: "a", by },
      ],
    });
    expect((await api.post("/v1/counters/reborn/incr", items(100))).status).toBe(200);
    expect((await api.del("/v1/counters/reborn", { key: "admin" })).status).toBe(204);
    const results = await Promise.all([
      ...Array.from({ length: 15 }, () => api.post("/v1/counters/reborn/incr", items(1))),
      job("sweep-counters"),
      job("sweep-counters"),
      job("sweep-counters"),
      ...Array.from({ length: 15 }, () => api.post("/v1/counters/reborn/incr", items(1))),
    ]);
    for (const r of results) expect(r.status).toBe(200);
    expect((await job("sweep-counters")).status).toBe(200);
    const read = async (q: string) => (await api.get(`/v1/counters/reborn/members/a${q}`)).body.score;
    expect({
      plain: await read(""),
      hour: await read("?period=hour&from=2026-11-22T13:00:00Z&to=2026-11-22T13:00:00Z"),
      day: await read("?period=day&from=2026-11-22&to=2026-11-22"),
      wholeDayInHours: await read("?period=hour&from=2026-11-22T00:00:00Z&to=2026-11-22T23:00:00Z"),
    }).toEqual({ plain: 30, hour: 30, day: 30, wholeDayInHours: 30 });
  });
});

describe("one Idempotency-Key both ways at once: queued and synchronous", () => {
  const api: IngestApi = createIngestApi({ label: "rv5r-queue", start: at(22, 12, 30) });
  afterAll(() => api.cleanup());
  const score = async (member: string) => {
    const res = await api.get(`/v1/counters/q/members/${member}`);
    return res.status === 404 ? 0 : (res.body.score as number);
  };

  it("a queued request delivered twice at once while 10 synchronous copies race it: applied once", async () => {
    // the consumer's and the write's scripts loaded beforehand, so the race is real
    await api.post("/v1/counters/warm/incr", { member: "w" }, { headers: api.asyncHeaders });
    await api.deliver(api.queue.sent.splice(0));
    await api.post("/v1/counters/warm/incr", { member: "w" });
    const key = freshKey("both-ways");
    const body = { member: "m", by: 3 };
    const queued = await api.post("/v1/counters/q/incr", body, {
      headers: { ...api.asyncHeaders, "idempotency-key": key },
    });
    expect(queued.status).toBe(202);
    const messages = api.queue.sent.splice(0);
    expect(messages).toHaveLength(1);
    const results = await Promise.all([
      api.deliver(messages),
      ...Array.from({ length: 5 }, () =>
        api.post("/v1/counters/q/incr", body, { headers: { "idempotency-key": key } }),
      ),
      api.deliver(messages, { attempts: 2 }),
      ...Array.from({ length: 5 }, () =>
        api.post("/v1/counters/q/incr", body, { headers: { "idempotency-key": key } }),
      ),
    ]);
    const sync = results.filter((r): r is TestResponse => "status" in r);
    for (const r of sync) expect(r.status).toBe(200);
    expect(sync.filter((r) => !replayed(r)).length).toBeLessThanOrEqual(1);
    expect(await score("m")).toBe(3);
    // a third delivery (Queues retries what a consumer did not ack) still applies nothing
    await api.deliver(messages, { attempts: 3 });
    expect(await score("m")).toBe(3);
  });

  it("20 queued copies of one key sent at once, delivered as 2 batches at once (and 1 more later): applied once", async () => {
    const key = freshKey("queued-copies");
    const body = { member: "c", by: 4 };
    const accepted = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.post("/v1/counters/q/incr", body, { headers: { ...api.asyncHeaders, "idempotency-key": key } }),
      ),
    );
    for (const r of accepted) expect([200, 202]).toContain(r.status);
    const messages = api.queue.sent.splice(0);
    await Promise.all([api.deliver(messages.slice(0, 10)), api.deliver(messages.slice(10))]);
    await api.deliver(messages, { attempts: 2 });
    expect(await score("c")).toBe(4);
    // and a synchronous retry is a replay
    const sync = await api.post("/v1/counters/q/incr", body, { headers: { "idempotency-key": key } });
    expect(sync.status).toBe(200);
    expect(replayed(sync)).toBe(true);
    expect(await score("c")).toBe(4);
  });

  it("the same Idempotency-Key from two API keys, one queued and one synchronous, at once: two writes", async () => {
    const key = freshKey("two-ways-two-keys");
    const body = { member: "n", by: 5 };
    const queued = await api.post("/v1/counters/q/incr", body, {
      headers: { ...api.asyncHeaders, "idempotency-key": key },
    });
    expect(queued.status).toBe(202);
    const messages = api.queue.sent.splice(0);
    const [, ...sync] = await Promise.all([
      api.deliver(messages),
      ...Array.from({ length: 5 }, () =>
        api.post("/v1/counters/q/incr", body, { key: TEST_INGEST_KEY_2, headers: { "idempotency-key": key } }),
      ),
    ]);
    for (const r of sync) expect((r as TestResponse).status).toBe(200);
    expect(sync.filter((r) => !replayed(r as TestResponse))).toHaveLength(1);
    expect(await score("n")).toBe(10);
  });
});

describe("the rate limit under a burst", () => {
  const track = cleanedUpAfterAll<TestApi>();

  it("20 requests of one key at once with RATE_LIMIT_PER_10S=5: exactly 5 pass, each told a different remaining", async () => {
    // the limiter's window is the real clock's: a burst that a window boundary splits is run again
    for (let attempt = 1; ; attempt++) {
      const api = track(createTestApi({ label: `rv5r-rate${attempt}`, vars: { RATE_LIMIT_PER_10S: "5" } }));
      while (Date.now() % 10_000 > 6_000) {
        await new Promise((r) => setTimeout(r, 100));
        await api.stats(); // workerd moves Date.now() only on I/O
      }
      const window = Math.floor(Date.now() / 10_000);
      // the limiter's script loaded beforehand under another key, so the burst is not serialised by a NOSCRIPT
      await api.get("/v1/not-a-route", { key: "admin" });
      const answers = await Promise.all(Array.from({ length: 20 }, () => api.get("/v1/not-a-route")));
      if (Math.floor(Date.now() / 10_000) !== window && attempt < 3) continue;
      const passed = answers.filter((r) => r.status === 404);
      expect(passed).toHaveLength(5);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(15);
      expect(passed.map((r) => r.headers.get("ratelimit-remaining")).sort()).toEqual(["0", "1", "2", "3", "4"]);
      return;
    }
  });
});
