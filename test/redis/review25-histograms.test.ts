/**
 * Review 25: the histograms' two-set registry of review 24 (src/histograms/listing.ts) with fresh
 * eyes, and the reads, PUT and DELETE around it, on real Redis (the local Upstash server) with
 * injected clocks. Two libraries on one prefix with clocks apart stand for two Workers.
 */
import { describe, expect, it } from "vitest";
import { histogramKeys } from "../../src/histograms/keys.ts";
import { Edgestats, ValidationError } from "../../src/index.ts";
import { CLOCK_SKEW_MS } from "../../src/time.ts";
import { histogramsPass as pass } from "../helpers/histograms.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review25hist", { timeoutMs: 30_000 });
const { target } = lib;

const DAY = 86_400_000;
const T0 = Date.UTC(2027, 3, 10, 12);
const TODAY = Date.UTC(2027, 3, 10);

/** Libraries on one prefix of their own, each with a clock the test moves (`at(offset)`: a Worker `offset` ms apart). */
function workers(label: string, start = T0) {
  const ctx = lib.ctx(start, label);
  const base = { now: start };
  const at = (offset = 0) => new Edgestats({ redis: lib.redis, prefix: ctx.prefix, clock: () => base.now + offset });
  return {
    prefix: ctx.prefix,
    base,
    at,
    stats: at(0),
    registry: histogramKeys.registry(ctx.prefix),
    deadlines: histogramKeys.deadlines(ctx.prefix),
    score: (key: string, name: string) => command<string | null>(target, "ZSCORE", key, name),
  };
}

async function fails(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a refusal");
}

describe("review 25: the registry between Workers whose clocks differ", () => {
  // Found in review 25, fixed. Severity: medium. The stamp of a name (listingLua: `ZADD registry GT now`) is the writing
  // Worker's clock, and the service allows clocks CLOCK_SKEW_MS (a minute) apart. A pass's first
  // page records `high`, the highest stamp, which a Worker whose clock runs ahead may have written;
  // a name not yet listed that a Worker whose clock lags then re-times is stamped below that
  // `high` but above the cursor: it jumps ahead of the cursor, and the next phase lists only names
  // above `high`, so the pass never lists it, although it was listed throughout (the very miss
  // review 24 fixed for deadlines; docs/histograms.md: "a stamp is the time of the change, above
  // anything the pass saw"). Fixed: the stamp is max(now, the registry's highest stamp + 1) (one
  // ZREVRANGE … 0 0 WITHSCORES more, only when the deadline moved), so a stamp is above every
  // `high` any pass has seen whatever the clocks (unless that high name was deleted since: docs).
  it("a pass lists a name re-timed mid-pass by a Worker whose clock lags the one that made the newest name", async () => {
    const { stats, base, at } = workers("skew");
    const names = ["n0", "n1", "n2", "n3", "n4", "n5"];
    for (const [i, name] of names.entries()) {
      base.now = T0 + i * 1000;
      await stats.histogram(name).configure({ bucketWidth: 1, retentionDays: 10 });
    }
    base.now = T0 + 10_000;
    // made by a Worker whose clock runs ahead (within the allowed skew)
    await at(CLOCK_SKEW_MS).histogram("ahead").configure({ bucketWidth: 1, retentionDays: 10 });
    const seen = await pass(stats, 2, async (page) => {
      // after the first page (ahead, n5): n0, not listed yet, is re-timed by a Worker on time
      if (page === 0) await at(0).histogram("n0").configure({ bucketWidth: 1, retentionDays: 20 });
    });
    for (const name of [...names, "ahead"]) expect(seen, name).toContain(name);
  });

  // Found in review 25, fixed. Severity: low (the same flaw, without any skew). A name re-timed in the very millisecond of the
  // newest stamp (two Workers, or one busy one: Workers' clocks advance only across I/O) takes
  // that stamp, equal to the pass's `high`; among equal stamps names go in reverse byte order, so
  // one sorting after the cursor's member lands ahead of the cursor, and the next phase lists only
  // stamps above `high`: missed. Fixed the same way: a stamp above the registry's highest.
  it("a pass lists a name re-timed in the millisecond of the newest stamp", async () => {
    const { stats, base } = workers("samems");
    for (const [i, name] of ["z", "m", "b"].entries()) {
      base.now = T0 + i * 1000;
      await stats.histogram(name).configure({ bucketWidth: 1, retentionDays: 10 });
    }
    base.now = T0 + 5000;
    await stats.histogram("top").configure({ bucketWidth: 1, retentionDays: 10 });
    const seen = await pass(stats, 1, async (page) => {
      // after the first page (top), in the same millisecond: z ("z" sorts before "top" in reverse order)
      if (page === 0) await stats.histogram("z").configure({ bucketWidth: 1, retentionDays: 20 });
    });
    for (const name of ["top", "z", "m", "b"]) expect(seen, name).toContain(name);
  });

  it("a stamp only rises: a lagging Worker's change of the newest name stamps it 1 ms above, not back to its clock", async () => {
    const { base, at, registry, deadlines, score } = workers("rises");
    await at(CLOCK_SKEW_MS).histogram("h").configure({ bucketWidth: 1, retentionDays: 5 });
    const stamped = Number(await score(registry, "h"));
    expect(stamped).toBe(T0 + CLOCK_SKEW_MS);
    await at(0).histogram("h").configure({ bucketWidth: 1, retentionDays: 9 }); // the deadline moves
    expect(Number(await score(registry, "h"))).toBe(stamped + 1); // above the highest (its own)
    await at(0).histogram("h").configure({ bucketWidth: 1, retentionDays: 9 }); // nothing moves
    expect(Number(await score(registry, "h"))).toBe(stamped + 1);
    expect(Number(await score(deadlines, "h"))).toBe(TODAY + 10 * DAY);
    base.now += 1;
    expect((await at(0).histograms()).histograms).toEqual(["h"]);
  });
});

describe("review 25: names that could be missed or listed forever", () => {
  it("a PUT lowering the retention below the stored days' age: the days go, the name stays listed until today's deadline", async () => {
    const { stats, base, registry, deadlines, score, prefix } = workers("lower");
    await stats.histogram("h").configure({ bucketWidth: 1, retentionDays: 30 });
    await stats.histogram("h").observe(1);
    base.now += 10 * DAY;
    await stats.histogram("h").configure({ bucketWidth: 1, retentionDays: 2 });
    // the old day (10 days ago) is past 2 days: gone; the name is listed as long as a write today would be
    expect(await command(target, "EXISTS", histogramKeys.day(prefix, "h", TODAY))).toBe(0);
    expect(Number(await score(deadlines, "h"))).toBe(TODAY + 10 * DAY + 3 * DAY);
    expect(Number(await score(registry, "h"))).toBe(base.now);
    expect((await stats.histograms()).histograms).toEqual(["h"]);
    base.now = TODAY + 13 * DAY - 1;
    expect((await stats.histograms()).histograms).toEqual(["h"]);
    base.now = TODAY + 13 * DAY;
    expect(await stats.histograms()).toMatchObject({ histograms: [], total: 0 });
  });

  it("re-created after expiry before any list dropped it: listed again with a new stamp and deadline", async () => {
    const { stats, base, registry, deadlines, score } = workers("reexpire");
    await stats.histogram("h").configure({ bucketWidth: 1, retentionDays: 1 });
    base.now = TODAY + 5 * DAY + 1000; // past its deadline (TODAY + 2 days), no list ran
    await stats.histogram("h").observe(3);
    expect(Number(await score(registry, "h"))).toBe(base.now);
    expect(Number(await score(deadlines, "h"))).toBe(TODAY + 7 * DAY);
    expect(await stats.histograms()).toMatchObject({ histograms: ["h"], total: 1 });
  });

  it("delete racing writes: a write after the delete is refused and lists nothing; one before is gone with it", async () => {
    const { stats, base, registry, deadlines, score, prefix } = workers("race");
    await stats.histogram("h").configure({ bucketWidth: 1 });
    base.now += DAY;
    await Promise.all([stats.histogram("h").observe(1), stats.histogram("h").delete()]);
    // whichever ran first, nothing is left of h, and no set lists it
    const rest = await stats
      .histogram("h")
      .observe(2)
      .catch((e: unknown) => e);
    expect(rest).toBeInstanceOf(Error);
    expect(await score(registry, "h")).toBeNull();
    expect(await score(deadlines, "h")).toBeNull();
    expect(await keysUnder(target, `${prefix}:hist:h`)).toEqual([]);
    expect(await stats.histograms()).toMatchObject({ histograms: [], total: 0 });
  });

  it("an older release raising a deadline in hist:_names only: the name keeps its place and leaves at the new deadline", async () => {
    const { stats, base, registry, deadlines } = workers("oldraise");
    await stats.histogram("a").configure({ bucketWidth: 1, retentionDays: 3 });
    base.now += 1000;
    await stats.histogram("b").configure({ bucketWidth: 1, retentionDays: 3 });
    // what a release before review 24 does for a's write of a later day: ZADD GT on _names
    await command(target, "ZADD", deadlines, "GT", TODAY + 9 * DAY, "a");
    const page = await stats.histograms();
    expect(page).toMatchObject({ histograms: ["b", "a"], total: 2 });
    base.now = TODAY + 4 * DAY;
    expect((await stats.histograms()).histograms).toEqual(["a"]);
    base.now = TODAY + 9 * DAY;
    expect(await stats.histograms()).toMatchObject({ histograms: [], total: 0 });
    expect(await command(target, "ZCARD", registry)).toBe(0);
  });

  it("by offset: total and next count the live names only, after expired ones left", async () => {
    const { stats, base } = workers("offset");
    for (let i = 0; i < 5; i++) {
      base.now = T0 + i * 1000;
      await stats.histogram(`n${i}`).configure({ bucketWidth: 1, retentionDays: i < 2 ? 1 : 30 });
    }
    expect(await stats.histograms({ limit: 2, offset: 2 })).toMatchObject({
      histograms: ["n2", "n1"],
      total: 5,
      next: 4,
      nextCursor: null,
    });
    base.now = TODAY + 2 * DAY;
    expect(await stats.histograms({ limit: 2, offset: 2 })).toMatchObject({
      histograms: ["n2"],
      total: 3,
      next: null,
      nextCursor: null,
    });
  });
});

describe("review 25: keys and refusals", () => {
  it("every key a histogram leaves expires, but its settings and the two registry sets", async () => {
    const { stats, base, prefix } = workers("ttl");
    const h = stats.histogram("h");
    await h.configure({ bucketWidth: 1, retentionDays: 30 });
    await h.observe([1, 2, { value: 3, at: T0 - 3 * DAY }, { value: 4, at: T0 - 20 * DAY }]);
    base.now += DAY;
    await h.observe(5);
    await h.read({ from: "2027-03-15", to: "2027-04-11" }); // > 4 days: a scratch union
    await h.configure({ bucketWidth: 1, retentionDays: 10 }); // re-times (the 20-day-old day goes)
    const keys = await keysUnder(target, prefix);
    const lasting = keys.filter(
      (k) => k.endsWith(":hist:h") || k.endsWith(":hist:_recent") || k.endsWith(":hist:_names"),
    );
    expect(lasting).toHaveLength(3);
    for (const key of keys.filter((k) => !lasting.includes(k))) {
      const ttl = await command<number>(target, "PTTL", key);
      expect(ttl, key).toBeGreaterThan(0);
    }
    expect(keys.some((k) => k.includes(":tmp"))).toBe(false);
    expect(keys.some((k) => k.endsWith(":20270321"))).toBe(false);
  });

  it("list parameters refused by the library as ValidationError naming the field", async () => {
    const { stats } = workers("params");
    await stats.histogram("h").configure({ bucketWidth: 1 });
    const first = await stats.histograms({ limit: 1 });
    for (const [options, path] of [
      [{ limit: 0 }, "limit"],
      [{ limit: 1001 }, "limit"],
      [{ offset: -1 }, "offset"],
      [{ cursor: "x" }, "cursor"],
      [{ cursor: `${T0}:h:${T0}:`, offset: 1 }, "offset"],
    ] as const) {
      const e = await fails(stats.histograms(options));
      expect(e, JSON.stringify(options)).toBeInstanceOf(ValidationError);
      expect(JSON.stringify((e as ValidationError).details), JSON.stringify(options)).toContain(path);
    }
    expect(first.histograms).toEqual(["h"]);
  });
});

describe("review 25: reads at month, year and leap-day edges", () => {
  it("a range over a leap day and a year's end answers the days' own figures, rollups or not", async () => {
    const now = Date.UTC(2028, 2, 10, 12);
    const { at } = workers("leap", now);
    const stats = at(0);
    const h = stats.histogram("h");
    await h.configure({ bucketWidth: 1 });
    const days = [
      Date.UTC(2027, 11, 31, 23, 59),
      Date.UTC(2028, 0, 1),
      Date.UTC(2028, 1, 28, 6),
      Date.UTC(2028, 1, 29, 6),
      Date.UTC(2028, 1, 29, 23, 59, 59, 999),
      Date.UTC(2028, 2, 1),
      Date.UTC(2028, 2, 10),
    ];
    for (const [i, day] of days.entries()) await h.observe({ value: i * 10 + 1, at: day });
    const all = await h.read({ from: "2027-12-01", to: "2028-03-10" });
    expect(all).toMatchObject({ count: 7, sum: 1 + 11 + 21 + 31 + 41 + 51 + 61, min: 1, max: 61 });
    const leap = await h.read({ from: "2028-02-29", to: "2028-02-29" });
    expect(leap).toMatchObject({ count: 2, sum: 31 + 41, min: 31, max: 41 });
    const feb = await h.read({ from: "2028-02-01", to: "2028-02-29" });
    expect(feb).toMatchObject({ count: 3, sum: 21 + 31 + 41 });
    const edge = await h.read({ from: "2027-12-31", to: "2028-01-01" });
    expect(edge).toMatchObject({ count: 2, sum: 12, min: 1, max: 11 });
    const e = await fails(h.read({ from: "2027-02-29", to: "2027-03-01" }));
    expect(e).toBeInstanceOf(ValidationError);
  });
});
