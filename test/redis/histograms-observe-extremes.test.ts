/**
 * Observe's mirror of the newest day's extremes (issue 14): the settings hash keeps the texts last
 * written to that day's `ext` set (extDay, extMax, extNegMin), read by the HMGET the script does
 * anyway, so a value within them skips the `ZADD GT` (5 commands). What must hold: the mirror is
 * never more than the `ext` key holds (else a new extreme would be dropped), so every read's min and
 * max are exactly the model's — values apart only past the 14th significant digit (Lua's tostring
 * would call them equal), negatives, -0 — after random sequences over several days, late writes,
 * batches across days, PUTs, a histogram written before the mirror, a day near its deadline whose
 * key vanished early, and a refused batch. And the counts per state are the documented ones.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import type { Ctx } from "../../src/context.ts";
import { ValidationError } from "../../src/errors.ts";
import { observe, put, read } from "../../src/histograms/index.ts";
import { histogramKeys, isoDay } from "../../src/histograms/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("hist-ext", { timeoutMs: 20_000 });
const { target } = lib;
const TAG = `hext-${Math.random().toString(36).slice(2, 8)}`;
/** Writes through this client are counted apart by the local server (its token carries TAG). */
const counted = createRedis({ url: target.url, token: `${target.token}.${TAG}` });

const T0 = Date.UTC(2027, 2, 10, 12);

/** The double `steps` representable values after `x` (x > 0) or before it (x < 0), by its bits. */
function ulps(x: number, steps: number): number {
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, x);
  buf.setBigUint64(0, buf.getBigUint64(0) + BigInt(steps));
  return buf.getFloat64(0);
}

/** The day's extremes as its `ext` set holds them (Redis answers scores with 17 digits: exact). */
async function stored(ctx: Ctx, name: string, day: number): Promise<{ min: number; max: number } | null> {
  const raw = await command<string[]>(target, "ZRANGE", histogramKeys.ext(ctx.prefix, name, day), 0, -1, "WITHSCORES");
  if (raw.length === 0) return null;
  const m = new Map<string, number>();
  for (let i = 0; i < raw.length; i += 2) m.set(raw[i] as string, Number(raw[i + 1]));
  return { min: 0 - (m.get("min") as number), max: m.get("max") as number };
}

async function mirror(ctx: Ctx, name: string): Promise<(string | null)[]> {
  return command<(string | null)[]>(
    target,
    "HMGET",
    histogramKeys.meta(ctx.prefix, name),
    "extDay",
    "extMax",
    "extNegMin",
  );
}

/** The invariant: the mirror names a day whose `ext` key holds at least its extremes. */
async function expectMirrorHeld(ctx: Ctx, name: string): Promise<void> {
  const [day, max, negMin] = await mirror(ctx, name);
  if (!day) return;
  const held = await stored(ctx, name, Number(day));
  expect(held, `mirror ${String(day)} names a day without extremes`).not.toBeNull();
  expect(held!.max).toBeGreaterThanOrEqual(Number(max));
  expect(0 - held!.min).toBeGreaterThanOrEqual(Number(negMin));
}

/** Observe through the counting client; returns its commands and what each was. */
async function countedObserve(ctx: Ctx, name: string, obs: { value: number; at?: number }[]) {
  await resetStats(target, TAG);
  await observe({ ...ctx, redis: counted }, name, obs);
  const s = await statsOf(target, TAG);
  return { commands: s.commands, zadd: s.byCommand.zadd ?? 0, hset: s.byCommand.hset ?? 0 };
}

describe("histogram extremes through observe's mirror", () => {
  it("random sequences over days: every day's min and max exactly the model's, the mirror always held", async () => {
    const rand = mulberry32(514);
    const ctx0 = lib.ctx(T0, "hext-model");
    // pools whose values differ past the 14th significant digit, negatives, zeros (-0 among them)
    const bases = [1.0000000000000002, 123456.78901234567, -987.6543210987654, 0.1, -0.30000000000000004];
    const pool: number[] = [0, -0, 1e15, -1e15];
    for (const b of bases) for (let k = -3; k <= 3; k++) pool.push(ulps(b, k * (b < 0 ? -1 : 1)));
    const pick = () => pool[Math.floor(rand() * pool.length)] as number;
    for (let h = 0; h < 4; h++) {
      const name = `m${h}`;
      await put(ctx0, name, { bucketWidth: 1000, retentionDays: 3 });
      const model = new Map<number, { min: number; max: number }>();
      let now = T0;
      for (let step = 0; step < 60; step++) {
        // time moves on (a day every ~15 writes); writes dated today, yesterday, two days ago
        now += Math.floor(rand() * 2.4 * HOUR);
        const ctx = { ...ctx0, now };
        const today = now - (now % DAY);
        const obs = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => {
          const back = rand() < 0.7 ? 0 : rand() < 0.6 ? 1 : 2;
          return { value: pick(), at: Math.max(today - back * DAY, today - back * DAY + (now % DAY) - 1) };
        });
        if (rand() < 0.05) await put(ctx, name, { bucketWidth: 1000, retentionDays: 3 });
        await observe(ctx, name, obs);
        for (const { value, at } of obs) {
          const day = at - (at % DAY);
          const v = value + 0;
          const m = model.get(day);
          model.set(day, m ? { min: Math.min(m.min, v), max: Math.max(m.max, v) } : { min: v, max: v });
        }
        await expectMirrorHeld(ctx, name);
        for (const [day, want] of model) {
          const got = await stored(ctx, name, day);
          expect(got, `${name} ${isoDay(day)} at step ${step}`).toEqual(want);
        }
        const today1 = model.get(today);
        if (today1) {
          const r = await read(ctx, name, { from: isoDay(today), to: isoDay(today), top: 0 });
          expect([r.min, r.max], `${name} read ${isoDay(today)}`).toEqual([today1.min, today1.max]);
        }
      }
    }
  }, 120_000);

  it("values apart past 14 significant digits: each new extreme is kept, not mistaken for the mirror's", async () => {
    const ctx = lib.ctx(T0, "hext-digits");
    await put(ctx, "d", { bucketWidth: 1 });
    const x = 1.0000000000000002;
    await observe(ctx, "d", [{ value: x }]);
    for (let k = 1; k <= 4; k++) {
      // up one step, and down one step below the first value
      await observe(ctx, "d", [{ value: ulps(x, k) }, { value: ulps(x, -k) }]);
      const r = await read(ctx, "d", { top: 0 });
      expect([r.min, r.max]).toEqual([ulps(x, -k), ulps(x, k)]);
    }
    // -0 and 0: one value, no negative zero answered
    await put(ctx, "z", { bucketWidth: 1 });
    await observe(ctx, "z", [{ value: -0 }]);
    await observe(ctx, "z", [{ value: 0 }]);
    const z = await read(ctx, "z", { top: 0 });
    expect([Object.is(z.min, 0), Object.is(z.max, 0)]).toEqual([true, true]);
    await observe(ctx, "z", [{ value: -5e-324 }]);
    expect((await read(ctx, "z", { top: 0 })).min).toBe(-5e-324);
  });

  it("commands per state: 5 within the day's extremes, 7 for a new one, 12 on a day's first write (14 on a later day)", async () => {
    const ctx = lib.ctx(T0, "hext-count");
    // loads the script, so every measured call is one EVALSHA that hits
    await put(ctx, "warm", { bucketWidth: 1 });
    await observe({ ...ctx, redis: counted }, "warm", [{ value: 1 }]);
    await put(ctx, "c", { bucketWidth: 1 });
    // first write of the day: ZCARD, 3 EXPIREs, registry ZADD, and the mirror's HSET
    expect(await countedObserve(ctx, "c", [{ value: 50 }])).toEqual({ commands: 12, zadd: 2, hset: 1 });
    // a new maximum, then a new minimum (existing buckets): ZADD GT and the mirror's HSET
    expect(await countedObserve(ctx, "c", [{ value: 50.75 }])).toEqual({ commands: 7, zadd: 1, hset: 1 });
    expect(await countedObserve(ctx, "c", [{ value: 50.25 }])).toEqual({ commands: 5, zadd: 0, hset: 0 });
    expect(await countedObserve(ctx, "c", [{ value: 10 }])).toEqual({ commands: 8, zadd: 1, hset: 1 });
    // within them: HMGET, bucket ZINCRBY, month ZINCRBY, sum ZINCRBY (+ EVALSHA); two buckets, 2 more
    expect(await countedObserve(ctx, "c", [{ value: 50.5 }])).toEqual({ commands: 5, zadd: 0, hset: 0 });
    expect(await countedObserve(ctx, "c", [{ value: 10 }, { value: 50.75 }])).toEqual({
      commands: 7,
      zadd: 0,
      hset: 0,
    });
    // a new bucket within them: + ZCARD
    expect(await countedObserve(ctx, "c", [{ value: 30 }])).toEqual({ commands: 6, zadd: 0, hset: 0 });
    // a late write into yesterday (the mirror stays on today): ZADD GT every time, no HSET
    const yesterday = T0 - DAY;
    expect(await countedObserve(ctx, "c", [{ value: 40, at: yesterday }])).toEqual({ commands: 11, zadd: 2, hset: 0 });
    expect(await countedObserve(ctx, "c", [{ value: 40, at: yesterday }])).toEqual({ commands: 6, zadd: 1, hset: 0 });
    expect((await mirror(ctx, "c"))[0]).toBe(String(T0 - (T0 % DAY)));
    // a batch over both days: today's within its extremes, yesterday's ZADD
    expect(await countedObserve(ctx, "c", [{ value: 40, at: yesterday }, { value: 30 }])).toEqual({
      commands: 9,
      zadd: 1,
      hset: 0,
    });
    // a PUT clears the mirror: the next write sets it again (7), then 5
    await put(ctx, "c", { bucketWidth: 1 });
    expect((await mirror(ctx, "c"))[0]).toBe("");
    expect(await countedObserve(ctx, "c", [{ value: 30 }])).toEqual({ commands: 7, zadd: 1, hset: 1 });
    expect(await countedObserve(ctx, "c", [{ value: 30 }])).toEqual({ commands: 5, zadd: 0, hset: 0 });
    // that write knew only its own value, so 10 and 50.75 are not in the mirror yet: the key keeps them
    expect(await stored(ctx, "c", T0 - (T0 % DAY))).toEqual({ min: 10, max: 50.75 });
    expect(await countedObserve(ctx, "c", [{ value: 50.75 }])).toEqual({ commands: 7, zadd: 1, hset: 1 });
    expect(await mirror(ctx, "c")).toEqual([String(T0 - (T0 % DAY)), "50.75", "-30"]);
    // the next day's first write moves the mirror there; its deadline rises, so the registry stamps
    // it (review 24: a ZADD more, 13; review 25: the registry's highest first, ZREVRANGE, 14)
    const next = { ...ctx, now: T0 + DAY };
    expect(await countedObserve(next, "c", [{ value: 1 }])).toEqual({ commands: 14, zadd: 3, hset: 1 });
    expect((await mirror(ctx, "c"))[0]).toBe(String(T0 + DAY - (T0 % DAY)));
  });

  it("a histogram written before the mirror: its first write sets it from the batch, the stored extremes stay", async () => {
    const ctx = lib.ctx(T0, "hext-old");
    await put(ctx, "o", { bucketWidth: 1 });
    await observe(ctx, "o", [{ value: -7 }, { value: 1 }, { value: 7 }]);
    // as the settings of a histogram observed before this change were: no mirror fields
    await command(target, "HDEL", histogramKeys.meta(ctx.prefix, "o"), "extDay", "extMax", "extNegMin");
    const today = T0 - (T0 % DAY);
    expect(await countedObserve(ctx, "o", [{ value: 1 }])).toEqual({ commands: 7, zadd: 1, hset: 1 });
    expect(await mirror(ctx, "o")).toEqual([String(today), "1", "-1"]);
    expect(await stored(ctx, "o", today)).toEqual({ min: -7, max: 7 });
    // within the stored extremes but past the mirror's: ZADD GT changes nothing, the mirror widens
    expect(await countedObserve(ctx, "o", [{ value: 1.5 }])).toEqual({ commands: 7, zadd: 1, hset: 1 });
    expect(await mirror(ctx, "o")).toEqual([String(today), "1.5", "-1"]);
    expect(await countedObserve(ctx, "o", [{ value: 1.25 }])).toEqual({ commands: 5, zadd: 0, hset: 0 });
    const r = await read(ctx, "o", { top: 0 });
    expect([r.count, r.min, r.max]).toEqual([6, -7, 7]);
  });

  it("a day stored before extremes existed: the first write creates its ext key with the day's deadline", async () => {
    const ctx = lib.ctx(T0, "hext-noext");
    await put(ctx, "n", { bucketWidth: 1 });
    const day = T0 - (T0 % DAY) - DAY;
    await observe(ctx, "n", [{ value: 3, at: day }]);
    // as such a day and its histogram's settings were: no ext key, no mirror
    await command(target, "DEL", histogramKeys.ext(ctx.prefix, "n", day));
    await command(target, "HDEL", histogramKeys.meta(ctx.prefix, "n"), "extDay", "extMax", "extNegMin");
    await observe(ctx, "n", [{ value: 3, at: day }]);
    expect(await stored(ctx, "n", day)).toEqual({ min: 3, max: 3 });
    expect(await mirror(ctx, "n")).toEqual([String(day), "3", "-3"]);
    const dayTtl = await command<number>(target, "PEXPIRETIME", histogramKeys.day(ctx.prefix, "n", day));
    const extTtl = await command<number>(target, "PEXPIRETIME", histogramKeys.ext(ctx.prefix, "n", day));
    expect(extTtl).toBeGreaterThan(0);
    expect(Math.abs(extTtl - dayTtl)).toBeLessThan(2000);
  });

  it("near its deadline a day's mirror is not trusted: an ext key gone early (clocks apart) is written again", async () => {
    const ctx = lib.ctx(T0, "hext-deadline");
    await put(ctx, "e", { bucketWidth: 1, retentionDays: 1 });
    const day = T0 - (T0 % DAY);
    // written late in its day: more than a day to its deadline, so the mirror holds it
    const late = { ...ctx, now: day + 23 * HOUR };
    await observe(late, "e", [{ value: 1 }, { value: 9 }]);
    expect(await countedObserve(late, "e", [{ value: 9 }])).toEqual({ commands: 5, zadd: 0, hset: 0 });
    // the next day at noon, 12 h before the day's deadline, no write dated that day yet: a late
    // write into the mirrored day does its ZADD GT
    const noon = { ...ctx, now: day + DAY + 12 * HOUR };
    expect(await countedObserve(noon, "e", [{ value: 1, at: day + HOUR }])).toEqual({
      commands: 6,
      zadd: 1,
      hset: 0,
    });
    // its key expired early (Redis's clock ahead of the Worker's): the next write puts its value back
    await command(target, "DEL", histogramKeys.ext(ctx.prefix, "e", day));
    // (the mirror still names 1..9, but a day so near its deadline is never skipped on its word)
    await observe(noon, "e", [{ value: 4, at: day + HOUR }]);
    await observe(noon, "e", [{ value: 5, at: day + HOUR }]);
    expect(await stored(ctx, "e", day)).toEqual({ min: 4, max: 5 });
  });

  it("the mirrored day's keys gone (evicted, or expired by a clock far ahead): its next write starts it afresh", async () => {
    const ctx = lib.ctx(T0, "hext-gone");
    await put(ctx, "g", { bucketWidth: 1 });
    const day = T0 - (T0 % DAY);
    await observe(ctx, "g", [{ value: -8 }, { value: 8 }]);
    await command(target, "DEL", histogramKeys.day(ctx.prefix, "g", day), histogramKeys.ext(ctx.prefix, "g", day));
    // within the mirror's -8..8, but the day is new again: its ZADD GT runs, and the mirror is its
    expect(await countedObserve(ctx, "g", [{ value: 2 }])).toMatchObject({ zadd: 2, hset: 1 });
    expect(await stored(ctx, "g", day)).toEqual({ min: 2, max: 2 });
    expect(await mirror(ctx, "g")).toEqual([String(day), "2", "-2"]);
    const r = await read(ctx, "g", { top: 0 });
    expect([r.count, r.min, r.max]).toEqual([1, 2, 2]);
  });

  it("a shorter retention that cuts the mirrored day: the PUT clears the mirror, the day starts afresh", async () => {
    const ctx = lib.ctx(T0, "hext-cut");
    await put(ctx, "k", { bucketWidth: 1, retentionDays: 30 });
    const day = T0 - (T0 % DAY) - 5 * DAY;
    await observe({ ...ctx, now: day + HOUR }, "k", [{ value: -3 }, { value: 3 }]);
    expect((await mirror(ctx, "k"))[0]).toBe(String(day));
    await put(ctx, "k", { bucketWidth: 1, retentionDays: 1 });
    expect(await stored(ctx, "k", day)).toBeNull();
    expect((await mirror(ctx, "k"))[0]).toBe("");
    // a Worker whose clock is still on that day writes into it: its extremes are its own
    await observe({ ...ctx, now: day + 2 * HOUR }, "k", [{ value: 1 }]);
    expect(await stored(ctx, "k", day)).toEqual({ min: 1, max: 1 });
    await expectMirrorHeld(ctx, "k");
  });

  it("a batch refused by the day's bucket cap leaves the mirror as it was", async () => {
    const ctx = lib.ctx(T0, "hext-refused");
    await put(ctx, "r", { bucketWidth: 1 });
    for (let b = 0; b < 5; b++)
      await observe(
        ctx,
        "r",
        Array.from({ length: 1000 }, (_, i) => ({ value: b * 1000 + i })),
      );
    const before = await mirror(ctx, "r");
    expect(before).toEqual([String(T0 - (T0 % DAY)), "4999", "0"]);
    // a new day (yesterday) and a new bucket and extreme of today, past the cap: refused
    const batch = [{ value: -1e6, at: T0 - DAY }, { value: 1e6 }];
    await expect(observe(ctx, "r", batch)).rejects.toBeInstanceOf(ValidationError);
    expect(await mirror(ctx, "r")).toEqual(before);
    expect(await stored(ctx, "r", T0 - DAY)).toBeNull();
    const r = await read(ctx, "r", { top: 0 });
    expect([r.min, r.max]).toEqual([0, 4999]);
  });
});
