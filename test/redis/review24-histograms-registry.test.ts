/**
 * Review 24: the histograms' list on two sets (src/histograms/listing.ts), on real Redis (the local
 * Upstash server) with an injected clock: `hist:_recent`, the registry the list pages, scored by
 * the time of the write that last changed a name's listing deadline; `hist:_names`, the deadlines
 * (newest day + retention), which the list expires by. Pins the order, the expiry at the deadline,
 * delete and re-create, a retention change either way, the upgrade from a registry of deadlines
 * only (as releases before wrote it), and the exact commands of writes and list pages.
 */
import { describe, expect, it } from "vitest";
import { histogramKeys } from "../../src/histograms/keys.ts";
import { Edgestats } from "../../src/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { histogramsPass as pass } from "../helpers/histograms.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review24hist", { timeoutMs: 30_000 });
const { target } = lib;

const DAY = 86_400_000;
const T0 = Date.UTC(2027, 3, 10, 12);
const TODAY = Date.UTC(2027, 3, 10);

/** A library on a prefix of its own, with a clock the test moves; `tag` counts its commands apart. */
function library(label: string, start = T0) {
  const ctx = lib.ctx(start, label);
  const clock = { now: start };
  const tag = `r24h${Math.random().toString(36).slice(2, 8)}`;
  const counted = createRedis({ url: target.url, token: `${target.token}.${tag}` });
  const stats = new Edgestats({ redis: counted, prefix: ctx.prefix, clock: () => clock.now });
  const registry = histogramKeys.registry(ctx.prefix);
  const deadlines = histogramKeys.deadlines(ctx.prefix);
  return {
    stats,
    clock,
    registry,
    deadlines,
    /** Every name listed, first page of up to 100. */
    names: async () => (await stats.histograms({ limit: 100 })).histograms,
    /** The commands one call sent (EVALSHA included), its scripts already cached. */
    commands: async (fn: () => Promise<unknown>) => {
      await resetStats(target, tag);
      await fn();
      return (await statsOf(target, tag)).commands;
    },
    score: (key: string, name: string) => command<string | null>(target, "ZSCORE", key, name),
  };
}

describe("review 24: the histograms' list, scored by the time of listing", () => {
  it("lists by the write that last moved a name's deadline, latest first; a late write or a same-day PUT moves nothing", async () => {
    const { stats, clock, registry, names, score } = library("order");
    for (const name of ["a", "b", "c"]) await stats.histogram(name).configure({ bucketWidth: 1, retentionDays: 7 });
    expect(await names()).toEqual(["c", "b", "a"]); // the same stamp: by name, reversed
    clock.now += 1000;
    await stats.histogram("a").observe(1); // the PUT's day: the deadline stays
    expect(await names()).toEqual(["c", "b", "a"]);
    clock.now += DAY;
    await stats.histogram("b").observe({ value: 1, at: T0 - DAY }); // a late write: an older day
    expect(await names()).toEqual(["c", "b", "a"]);
    await stats.histogram("a").observe(2); // a newer day: the deadline rises, a is stamped now
    expect(await names()).toEqual(["a", "c", "b"]);
    expect(Number(await score(registry, "a"))).toBe(clock.now);
    clock.now += 1000;
    await stats.histogram("c").configure({ bucketWidth: 1, retentionDays: 7 }); // a later day than its PUT's
    expect(await names()).toEqual(["c", "a", "b"]);
    const stamped = await score(registry, "c");
    clock.now += 1000;
    await stats.histogram("c").configure({ bucketWidth: 1, retentionDays: 7 }); // again, the same day
    expect(await score(registry, "c")).toBe(stamped);
    // the documented order of the route too: the same names, by offset
    expect((await stats.histograms({ limit: 2, offset: 1 })).histograms).toEqual(["a", "b"]);
  });

  it("a name leaves the list (and both sets) exactly at its deadline, its newest day's", async () => {
    const { stats, clock, registry, deadlines, names, score } = library("expiry");
    await stats.histogram("h").configure({ bucketWidth: 1, retentionDays: 2 });
    await stats.histogram("k").configure({ bucketWidth: 1, retentionDays: 30 });
    clock.now = T0 + DAY;
    await stats.histogram("h").observe(1); // tomorrow's data: kept 2 days after tomorrow ends
    const deadline = TODAY + DAY + 3 * DAY;
    expect(Number(await score(deadlines, "h"))).toBe(deadline);
    clock.now = deadline - 1;
    expect(await names()).toEqual(["h", "k"]);
    clock.now = deadline;
    const page = await stats.histograms({ limit: 100 });
    expect(page).toMatchObject({ histograms: ["k"], total: 1 });
    expect(await score(registry, "h")).toBeNull();
    expect(await score(deadlines, "h")).toBeNull();
    // its settings stay: its next write lists it again
    await stats.histogram("h").observe(1);
    expect(await names()).toEqual(["h", "k"]);
  });

  it("delete and re-create: the old entries go, the new one is listed with its own stamp and deadline", async () => {
    const { stats, clock, registry, deadlines, names, score } = library("recreate");
    await stats.histogram("x").configure({ bucketWidth: 1, retentionDays: 30 });
    await stats.histogram("y").configure({ bucketWidth: 1, retentionDays: 30 });
    await stats.histogram("x").observe(1);
    clock.now += 1000;
    await stats.histogram("y").observe({ value: 1, at: T0 + 60_000 });
    await stats.histogram("x").delete();
    expect(await names()).toEqual(["y"]);
    expect(await score(registry, "x")).toBeNull();
    expect(await score(deadlines, "x")).toBeNull();
    clock.now += 1000;
    await stats.histogram("x").configure({ bucketWidth: 1, retentionDays: 1 });
    expect(await names()).toEqual(["x", "y"]);
    expect(Number(await score(registry, "x"))).toBe(clock.now);
    expect(Number(await score(deadlines, "x"))).toBe(TODAY + 2 * DAY); // not the old 30 days
    clock.now = TODAY + 2 * DAY;
    expect(await names()).toEqual(["y"]);
  });

  it("a new retention moves the deadline either way, set exactly, and stamps the name", async () => {
    const { stats, clock, deadlines, names, score } = library("retention");
    await stats.histogram("down").configure({ bucketWidth: 1, retentionDays: 10 });
    await stats.histogram("up").configure({ bucketWidth: 1, retentionDays: 3 });
    await stats.histogram("down").observe(1);
    await stats.histogram("up").observe(1);
    expect(await names()).toEqual(["up", "down"]);
    clock.now += 1000;
    await stats.histogram("down").configure({ bucketWidth: 1, retentionDays: 3 });
    expect(await names()).toEqual(["down", "up"]); // stamped by the change
    expect(Number(await score(deadlines, "down"))).toBe(TODAY + 4 * DAY);
    clock.now += 1000;
    await stats.histogram("up").configure({ bucketWidth: 1, retentionDays: 20 });
    expect(Number(await score(deadlines, "up"))).toBe(TODAY + 21 * DAY);
    expect(await names()).toEqual(["up", "down"]);
    clock.now = TODAY + 4 * DAY - 1;
    expect(await names()).toEqual(["up", "down"]);
    clock.now = TODAY + 4 * DAY;
    expect(await names()).toEqual(["up"]);
    clock.now = TODAY + 21 * DAY - 1;
    expect(await names()).toEqual(["up"]);
    clock.now = TODAY + 21 * DAY;
    expect(await names()).toEqual([]);
  });

  it("a pass by cursor lists every name present throughout, while names are written, re-timed, made and deleted", async () => {
    const { stats, clock } = library("churn");
    const all = Array.from({ length: 24 }, (_, i) => `n${String(i).padStart(2, "0")}`);
    for (const [i, name] of all.entries()) {
      clock.now = T0 + i * 1000;
      await stats.histogram(name).configure({ bucketWidth: 1, retentionDays: 5 + (i % 7) });
    }
    const deleted = new Set<string>();
    let made = 0;
    const seen = await pass(stats, 3, async (page) => {
      clock.now += DAY / 4;
      // every page: one name written (on a later day: it rises), one re-timed, one new, one deleted
      const written = all[(page * 5) % all.length] as string;
      if (!deleted.has(written)) await stats.histogram(written).observe(page);
      const retimed = all[(page * 7 + 3) % all.length] as string;
      if (!deleted.has(retimed))
        await stats.histogram(retimed).configure({ bucketWidth: 1, retentionDays: 2 + (page % 9) });
      await stats.histogram(`m${made++}`).configure({ bucketWidth: 1 });
      const gone = all[(page * 11 + 1) % all.length] as string;
      if (page % 3 === 2 && !deleted.has(gone)) {
        deleted.add(gone);
        await stats.histogram(gone).delete();
      }
    });
    for (const name of all.filter((n) => !deleted.has(n))) expect(seen, name).toContain(name);
  });
});

describe("review 24: upgrade from a registry of deadlines only", () => {
  it("lists names an older release registered, in their old order, then as now; an old cursor restarts at the top", async () => {
    const { stats, clock, registry, deadlines, names, score, commands } = library("upgrade");
    for (const [name, retentionDays] of [
      ["a", 6],
      ["b", 7],
      ["c", 8],
      ["d", 9],
    ] as const)
      await stats.histogram(name).configure({ bucketWidth: 1, retentionDays });
    await stats.histogram("warm").configure({ bucketWidth: 1 });
    await stats.histogram("warm").delete();
    await names();
    // What a release before review 24 left: `hist:_names` scored by deadline (the same key and
    // scores), and no `hist:_recent`.
    await command(target, "DEL", registry);
    expect(await command(target, "ZREVRANGE", deadlines, 0, -1, "WITHSCORES")).toEqual([
      "d",
      String(TODAY + 10 * DAY),
      "c",
      String(TODAY + 9 * DAY),
      "b",
      String(TODAY + 8 * DAY),
      "a",
      String(TODAY + 7 * DAY),
    ]);
    // an older release's cursor, its first page of 2 (d, c): position c's deadline, high d's
    const oldCursor = `${TODAY + 9 * DAY}:c:${TODAY + 10 * DAY}:`;
    // the first list joins them (ZUNIONSTORE, ZINTERSTORE: 2 commands more, once), in their old order
    expect(await commands(() => stats.histograms({ limit: 100 }))).toBe(7);
    expect(await names()).toEqual(["d", "c", "b", "a"]);
    expect(Number(await score(registry, "d"))).toBe((TODAY + 10 * DAY) / 1024);
    expect(await commands(() => stats.histograms({ limit: 100 }))).toBe(5);
    // the older release's pass goes on from the top: listed again, never skipped
    expect((await stats.histograms({ limit: 100, cursor: oldCursor })).histograms).toEqual(["d", "c", "b", "a"]);
    // a name written since goes first
    clock.now += DAY;
    await stats.histogram("a").observe(1);
    expect(await names()).toEqual(["a", "d", "c", "b"]);
    // an older release still running during the deploy: a name it makes, a name it deletes
    await command(target, "ZADD", deadlines, "GT", TODAY + 12 * DAY, "o");
    expect(await names()).toEqual(["a", "o", "d", "c", "b"]);
    await command(target, "ZREM", deadlines, "c");
    expect(await stats.histograms({ limit: 100 })).toMatchObject({ histograms: ["a", "o", "d", "b"], total: 4 });
    expect(await score(registry, "c")).toBeNull();
    // joined names still leave at their deadline, exactly (b's, and a's from its write since)
    clock.now = TODAY + 8 * DAY - 1;
    expect(await names()).toEqual(["a", "o", "d", "b"]);
    clock.now = TODAY + 8 * DAY;
    expect(await names()).toEqual(["o", "d"]);
    expect(await score(registry, "b")).toBeNull();
    expect(await score(registry, "a")).toBeNull();
  });
});

describe("review 24: exact commands (EVALSHA included, scripts cached)", () => {
  it("PUT, observe and DELETE: first touch, a later day, steady", async () => {
    const { stats, clock, commands } = library("writes");
    await stats.histogram("warm").configure({ bucketWidth: 1 });
    await stats.histogram("warm").observe(1);
    await stats.histogram("warm").delete();
    const h = stats.histogram("h");
    expect(await commands(() => h.configure({ bucketWidth: 1 }))).toBe(6); // HMGET, HSET, 2 ZADD, the registry's highest (review 25)
    expect(await commands(() => h.configure({ bucketWidth: 1 }))).toBe(4); // the deadline stays: 1 ZADD
    expect(await commands(() => h.observe(5))).toBe(12); // first touch of the PUT's day: no stamp
    expect(await commands(() => h.observe(5))).toBe(5); // steady
    clock.now += DAY;
    expect(await commands(() => h.observe(5))).toBe(14); // a later day: the deadline rises, stamped above the highest
    expect(await commands(() => h.observe({ value: 5, at: T0 }))).toBe(6); // late write: no listing
    clock.now += DAY;
    expect(await commands(() => h.configure({ bucketWidth: 1 }))).toBe(6); // a later day than its data's
    expect(await commands(() => h.delete())).toBe(4); // UNLINK, 2 ZREM
  });

  it("list pages: a constant per page, whatever the registry's size", async () => {
    const { stats, clock, commands } = library("pages");
    for (let i = 0; i < 7; i++) {
      clock.now = T0 + i * 1000;
      await stats.histogram(`n${i}`).configure({ bucketWidth: 1 });
    }
    await stats.histograms({ limit: 2 });
    // EVALSHA, ZRANGE BYSCORE (expired), 2 ZCARD, ZREVRANGE
    expect(await commands(() => stats.histograms({ limit: 2 }))).toBe(5);
    expect(await commands(() => stats.histograms({ limit: 2, offset: 2 }))).toBe(5);
    const first = await stats.histograms({ limit: 2 });
    // then the resume (ZSCORE, ZREVRANK) and the read
    let page = await stats.histograms({ limit: 2, cursor: first.nextCursor as string });
    expect(page.histograms).toEqual(["n4", "n3"]);
    expect(await commands(() => stats.histograms({ limit: 2, cursor: first.nextCursor as string }))).toBe(7);
    page = await stats.histograms({ limit: 2, cursor: page.nextCursor as string });
    page = await stats.histograms({ limit: 2, cursor: page.nextCursor as string });
    expect(page.histograms).toEqual(["n0"]);
    expect(page.nextCursor).toBeNull();
    // the phase's end: one ZREVRANGEBYSCORE more
    const last = (await stats.histograms({ limit: 2, cursor: first.nextCursor as string })).nextCursor as string;
    const tail = (await stats.histograms({ limit: 2, cursor: last })).nextCursor as string;
    expect(await commands(() => stats.histograms({ limit: 2, cursor: tail }))).toBe(8);
    // a name past its deadline: one ZREM from each set more
    clock.now = TODAY + 401 * DAY;
    expect(await commands(() => stats.histograms({ limit: 2 }))).toBe(7);
  });
});
