/**
 * The threshold read of top N (src/trending/top-script.ts): a fixed handful of
 * commands however big the hours are, the same answer as a brute-force count
 * (also when a tie straddles the boundary and the read must deepen or merge),
 * and cached unions invalidated by late events.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi, type TestApi } from "../helpers/worker.ts";
import { bruteTop, HOUR, type TrendingEvent } from "../helpers/trending.ts";

const T0 = Date.UTC(2026, 10, 22, 12, 30);
/** Commands of the seed post's naive read: ZRANGE, ZCARD, ZREMRANGEBYRANK, ZUNIONSTORE, EXPIRE, ZRANGE. */
const NAIVE_READ_COMMANDS = 6;

type Event = TrendingEvent;

/** Posts events in batches of 1,000 and remembers them for the brute-force count. */
async function record(api: TestApi, stream: string, log: Event[], events: Event[]): Promise<void> {
  for (let i = 0; i < events.length; i += 1000) {
    const res = await api.post(`/v1/trending/${stream}/events`, { events: events.slice(i, i + 1000) });
    expect(res.status).toBe(200);
  }
  log.push(...events);
}

const pad = (i: number) => String(i).padStart(4, "0");

describe("threshold read: commands per top-N read", () => {
  // TRENDING_KEEP=0: compaction finishes hours without trimming them, so answers stay exact
  const api = createTestApi({ label: "trend-ta-cost", start: T0, vars: { TRENDING_KEEP: "0" } });
  afterAll(() => api.cleanup());

  it("costs 5 commands warm (4 when the first page holds the whole current hour; 5-7 while the previous hour awaits compaction), whatever the sizes, and matches a brute-force count", async () => {
    // warm the script cache on another stream: the first call after a flush pays the NOSCRIPT fallback
    await api.post("/v1/trending/warmup/events", { member: "w" });
    await api.get("/v1/trending/warmup/top");

    // small: the first page (256 deep) holds all of the current hour, so no ZMSCORE on it is needed
    for (const [stream, perHour, coldOpen, warmOpen, cold, warmCost, mix] of [
      ["small", 40, 10, 5, 8, 4, { evalsha: 1, zrevrange: 2, zmscore: 1 }],
      ["large", 3000, 12, 7, 9, 5, { evalsha: 1, zrevrange: 2, zmscore: 2 }],
    ] as const) {
      const log: Event[] = [];
      // three finished hours and the current one, long-tailed counts (a few hot members, as
      // searches and pages are) shuffled differently in each hour
      for (const back of [3, 2, 1, 0]) {
        await record(
          api,
          stream,
          log,
          Array.from({ length: perHour }, (_, i) => ({
            member: `m${pad(i)}`,
            count: 1 + Math.floor(1000 / (1 + ((i * 7919 + back * 13) % perHour))),
            at: T0 - back * HOUR,
          })),
        );
      }
      // The previous hour awaits compaction: the union leaves it out (it may hold a whole raw hour)
      // and the read pages it as a third set. Cold: ZSCORE of the queue, ZUNIONSTORE of the older
      // hours, ZADD of the marker, EXPIRE, one more ZMSCORE.
      const open = await api.cost(() => api.get(`/v1/trending/${stream}/top?n=10&window=24h`));
      expect(open.requests).toBe(1);
      expect(open.result.body.items).toEqual(bruteTop(log, api.now, 24, 10));
      const openWarm = await api.cost(() => api.get(`/v1/trending/${stream}/top?n=10&window=24h`));
      expect(openWarm.result.body.items).toEqual(open.result.body.items);
      expect([open.commands, openWarm.commands]).toEqual([coldOpen, warmOpen]);
      // compaction finishes the previous hour and completes the union a read built: two sets from now on
      const job = await api.post("/internal/jobs/compact", undefined, { key: "admin" });
      expect(job.body.result).toMatchObject({ streams: 1, unionsBuilt: 1 });
      // a window nobody read yet: cold, built from the finished hours (ZSCORE of the queue,
      // ZUNIONSTORE, EXPIRE, one more ZMSCORE)
      const first = await api.cost(() => api.get(`/v1/trending/${stream}/top?n=10&window=48h`));
      expect(first.requests).toBe(1);
      expect(first.result.body.items).toEqual(bruteTop(log, api.now, 48, 10));
      expect(first.commands).toBe(cold);

      await api.resetStats();
      const warm = await api.cost(() => api.get(`/v1/trending/${stream}/top?n=10&window=24h`));
      const stats = (await api.stats()).byCommand;
      expect(warm.requests).toBe(1);
      expect(warm.commands).toBe(warmCost);
      expect(warm.commands).toBeLessThan(NAIVE_READ_COMMANDS);
      expect(stats).toEqual(mix);
      expect(warm.result.body).toMatchObject({ exact: true, maxError: 0, topProven: true });
      expect(warm.result.body.items).toEqual(first.result.body.items);
    }
  });

  it("costs 4 commands with an empty current hour", async () => {
    api.advance(HOUR); // 13:30: nothing written in hour 13 yet, hour 12 compacted
    await api.post("/internal/jobs/compact", undefined, { key: "admin" });
    const cold = await api.cost(() => api.get("/v1/trending/large/top?n=10&window=24h"));
    expect(cold.requests).toBe(1);
    const warm = await api.cost(() => api.get("/v1/trending/large/top?n=10&window=24h"));
    expect(warm.requests).toBe(1);
    expect(warm.commands).toBe(4);
    expect(warm.result.body.items).toEqual(cold.result.body.items);
    expect(warm.result.body.items).toHaveLength(10);
    api.setNow(T0);
  });
});

describe("threshold read: ties straddling the top-N boundary", () => {
  const api = createTestApi({ label: "trend-ta-ties", start: T0 });
  afterAll(() => api.cleanup());

  it("deepens until the tie is settled, and the answer equals a brute-force count", async () => {
    const log: Event[] = [];
    // finished hour: five clear leaders and 500 members at 1; current hour: 2,000 members at 1.
    // The 500 members in both hours tie at 2 around ranks 6..505: the boundary sits inside the tie.
    await record(api, "ties", log, [
      ...["a", "b", "c", "d", "e"].map((member, i) => ({ member, count: 10 - i, at: T0 - HOUR })),
      ...Array.from({ length: 500 }, (_, i) => ({ member: `t${pad(1500 + i)}`, count: 1, at: T0 - HOUR })),
    ]);
    await record(
      api,
      "ties",
      log,
      Array.from({ length: 2000 }, (_, i) => ({ member: `t${pad(i)}`, count: 1, at: T0 })),
    );
    await api.get("/v1/trending/ties/top?n=10"); // builds the union
    const read = await api.cost(() => api.get("/v1/trending/ties/top?n=10&window=24h"));
    expect(read.requests).toBe(1);
    expect(read.commands).toBeGreaterThan(5); // it had to go deeper than one round
    expect(read.result.body.items).toEqual(bruteTop(log, api.now, 24, 10));
    expect(read.result.body.items.slice(5).map((i: { member: string }) => i.member)).toEqual([
      "t1500",
      "t1501",
      "t1502",
      "t1503",
      "t1504",
    ]);
    expect(read.result.body.exact).toBe(true);
  });

  it("falls back to the merge when the tie is deeper than the threshold read goes, still exact", async () => {
    const log: Event[] = [];
    // 3,000 members tie at 1 in the current hour, past the deepest page (1,024)
    await record(api, "flat", log, [
      ...["k", "l", "m"].map((member, i) => ({ member, count: 5 + i, at: T0 - 2 * HOUR })),
      ...Array.from({ length: 3000 }, (_, i) => ({ member: `f${pad(2999 - i)}`, count: 1, at: T0 })),
    ]);
    await api.get("/v1/trending/flat/top?n=10");
    const read = await api.cost(() => api.get("/v1/trending/flat/top?n=10&window=24h"));
    expect(read.requests).toBe(1);
    expect(read.commands).toBeGreaterThan(5);
    expect(read.result.body.items).toEqual(bruteTop(log, api.now, 24, 10));
    expect(read.result.body.items.map((i: { member: string }) => i.member)).toEqual([
      "m",
      "l",
      "k",
      "f0000",
      "f0001",
      "f0002",
      "f0003",
      "f0004",
      "f0005",
      "f0006",
    ]);
    // the merge leaves no scratch key behind
    expect((await api.keys()).filter((k) => k.endsWith(":tmp"))).toEqual([]);
  });

  it("agrees with the member lookup (the merge) on fractional counts split across both sides", async () => {
    const log: Event[] = [];
    const events: Event[] = [];
    for (let i = 0; i < 60; i++) {
      events.push({ member: `x${pad(i)}`, count: 0.1 * (1 + (i % 7)), at: T0 - (1 + (i % 3)) * HOUR });
      events.push({ member: `x${pad(i)}`, count: 0.2 * (1 + (i % 5)), at: T0 });
    }
    await record(api, "frac", log, events);
    const top = await api.get("/v1/trending/frac/top?n=15&window=3h");
    expect(top.body.items).toEqual(bruteTop(log, api.now, 3, 15));
    for (const item of top.body.items as { rank: number; member: string; count: number }[]) {
      const one = await api.get(`/v1/trending/frac/members/${item.member}?window=3h`);
      expect(one.body).toMatchObject({ count: item.count, rank: item.rank });
    }
  });
});

describe("late events invalidate the cached unions", () => {
  const api = createTestApi({ label: "trend-ta-late", start: T0 });
  afterAll(() => api.cleanup());
  const union = (w: number | "x") => `${api.prefix}:trending:late:u:${w}:2026112212`;

  it("a late event deletes the current hour's unions that hold its hour, in the same round trip", async () => {
    const log: Event[] = [];
    await record(api, "late", log, [
      { member: "o", count: 2, at: T0 - 40 * HOUR },
      { member: "p", count: 5, at: T0 - 3 * HOUR },
      { member: "q", count: 4, at: T0 - HOUR },
      { member: "r", count: 1, at: T0 },
    ]);
    // 24 h and 48 h have unions of their own; every other width shares the slot u:x (a 1 h window has
    // none while its one finished hour awaits compaction: that hour is read as a set of its own)
    for (const w of [24, 48, 3]) await api.get(`/v1/trending/late/top?window=${w}h`);
    expect(await api.keys()).toEqual(expect.arrayContaining([union("x"), union(24), union(48)]));

    // a write to the current hour leaves the unions alone: the next read is warm
    await record(api, "late", log, [{ member: "r", count: 1, at: T0 }]);
    expect(await api.keys()).toEqual(expect.arrayContaining([union("x"), union(24), union(48)]));

    // an event 30 hours late: the 48 h union holds its hour, the 24 h one does not; the slot
    // may hold any width, so it goes too (the next read of another width rebuilds it anyway)
    const write = await api.cost(() =>
      api.post("/v1/trending/late/events", { member: "s", count: 9, at: T0 - 30 * HOUR }),
    );
    expect(write.requests).toBe(1);
    log.push({ member: "s", count: 9, at: T0 - 30 * HOUR });
    let keys = await api.keys();
    expect(keys).toContain(union(24));
    expect(keys).not.toContain(union(48));
    expect(keys).not.toContain(union("x"));
    // two hours late: the 24 h union holds it
    await record(api, "late", log, [{ member: "t", count: 7, at: T0 - 2 * HOUR }]);
    keys = await api.keys();
    expect(keys).not.toContain(union(24));

    const top = await api.get("/v1/trending/late/top?window=48h");
    expect(top.body.items).toEqual(bruteTop(log, api.now, 48, 10));
    expect(top.body.items[0]).toEqual({ rank: 1, member: "s", count: 9 });
    for (const w of [1, 2, 24, 30, 40]) {
      expect((await api.get(`/v1/trending/late/top?window=${w}h`)).body.items, `${w} h`).toEqual(
        bruteTop(log, api.now, w, 10),
      );
    }
    expect((await api.get("/v1/trending/late/members/s?window=30h")).body).toMatchObject({ count: 9, rank: 1 });
    expect((await api.get("/v1/trending/late/members/t?window=2h")).body).toMatchObject({ count: 7, rank: 1 });
  });
});

describe("a write at the end of its hour and the next hour's unions", () => {
  const api = createTestApi({ label: "trend-ta-skew", start: T0 });
  afterAll(() => api.cleanup());
  const at = (m: number, s = 0) => Date.UTC(2026, 10, 22, 12, m, s);
  const next = (w: number | "x") => `${api.prefix}:trending:skew:u:${w}:2026112213`;

  it("deletes the unions another Worker already built for the next hour, so its event is seen at once", async () => {
    const log: Event[] = [];
    api.setNow(at(50));
    await record(api, "skew", log, [{ member: "a", count: 5, at: at(50) }]);
    // a Worker whose clock has passed 13:00 reads, building hour 13's unions (they hold hour 12)
    // (its compaction, too: until hour 12 is compacted, unions leave it out and reads page it live)
    api.setNow(Date.UTC(2026, 10, 22, 13, 0, 1));
    await api.post("/internal/jobs/compact", undefined, { key: "admin" });
    for (const w of [1, 24]) await api.get(`/v1/trending/skew/top?window=${w}h`);
    expect(await api.keys()).toEqual(expect.arrayContaining([next("x"), next(24)]));

    // a writer whose clock still says 12:59:59 writes into hour 12: not late for it, yet
    // hour 13's unions already hold hour 12 and would miss the event for a whole hour
    api.setNow(at(59, 59));
    const write = await api.cost(() => api.post("/v1/trending/skew/events", { member: "b", count: 9 }));
    expect(write.requests).toBe(1);
    log.push({ member: "b", count: 9, at: at(59, 59) });
    const keys = await api.keys();
    expect(keys).not.toContain(next("x"));
    expect(keys).not.toContain(next(24));

    api.setNow(Date.UTC(2026, 10, 22, 13, 0, 2));
    for (const w of [1, 24]) {
      const top = await api.get(`/v1/trending/skew/top?window=${w}h`);
      expect(top.body.items).toEqual(bruteTop(log, api.now, w, 10));
      expect(top.body.items[0]).toEqual({ rank: 1, member: "b", count: 9 });
    }
  });

  it("costs an UNLINK only in the last 5 minutes of the hour, and never another round trip", async () => {
    await api.post("/v1/trending/warm/events", { member: "w" }); // the script is cached
    for (const [minute, dels] of [
      [30, 0],
      [54, 0],
      [55, 1],
      [59, 1],
    ] as const) {
      api.setNow(at(minute));
      const write = await api.cost(() => api.post("/v1/trending/skew/events", { member: "c" }));
      expect(write.requests).toBe(1);
      expect((await api.stats()).byCommand.unlink ?? 0, `write at 12:${minute}`).toBe(dels);
    }
    api.setNow(T0);
  });
});
