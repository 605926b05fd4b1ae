/**
 * Week counters without ttl: the `c:w` cursor (src/counters/trim.ts) costs a week's first write
 * nothing once it has caught up, and catches up fast after a late write moves it back (review 12:
 * a learn stopped at each kept week, so such a cursor paid an HMGET every other week for good); and
 * a member delete lowers the size records of the weeks it shrinks (src/counters/delete-weeks.ts).
 * Real Redis, commands counted by the local Upstash server, time injected.
 */
import { describe, expect, it } from "vitest";
import { deleteMember, increment } from "../../src/counters/index.ts";
import { counterKeys as K } from "../../src/counters/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, periodStart } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("weekcursor", { timeoutMs: 30_000 });
const { target } = lib;
const TAG = `weekcursor-${Math.random().toString(36).slice(2, 8)}`;
const counted = createRedis({ url: target.url, token: `${target.token}.${TAG}`, timeoutMs: 30_000 });
const WEEK = 7 * DAY;
const NOW = Date.UTC(2027, 5, 14, 12);
const W0 = periodStart("week", NOW) - 80 * WEEK;

async function fieldsOf(prefix: string, name: string) {
  const h = await command<string[]>(target, "HGETALL", K.index(prefix, name));
  const out = new Map<string, string>();
  for (let i = 0; i + 1 < h.length; i += 2) out.set(h[i]!, h[i + 1]!);
  return out;
}

describe("the week cursor of a counter without ttl", () => {
  it("after a late write creating a week 40 weeks back, first writes cost 11 a few times, then 10", async () => {
    const ctx = lib.ctx(NOW, "late");
    const cost = async (t: number) => {
      await resetStats(target, TAG);
      await increment({ ...ctx, redis: counted, now: t }, "c", [{ member: "a", period: "week" }]);
      return (await statsOf(target, TAG)).commands;
    };
    // weeks 20–49 written week by week (the script loaded, the registry stamp set within each week)
    for (let k = 20; k < 50; k++)
      await increment({ ...ctx, now: W0 + k * WEEK + DAY }, "c", [{ member: "a", period: "week" }]);
    const steady: number[] = [];
    for (let k = 50; k < 54; k++) steady.push(await cost(W0 + k * WEEK + DAY));
    // 10: a week's first touch refreshes the registry stamp, which reads the registry's highest
    // first (review 26, src/redis/pages.ts stampLua); 9 before
    expect(steady).toEqual([10, 10, 10, 10]);
    // a late write creating week 10, never written: the cursor moves back to it
    await increment({ ...ctx, now: W0 + 54 * WEEK }, "c", [{ member: "z", period: "week", at: W0 + 10 * WEEK + DAY }]);
    // the counter keeps every week (no ttl): the cursor passes the kept (and unlisted) weeks in
    // learns of up to 26 weeks each (an HMGET: 11), then costs nothing again
    const after: number[] = [];
    for (let k = 54; k < 62; k++) after.push(await cost(W0 + k * WEEK + DAY));
    expect(after.filter((n) => n === 11).length).toBeLessThanOrEqual(3);
    expect(after.slice(-4)).toEqual([10, 10, 10, 10]);
    // every week is still listed (nothing kept was dropped): 20–61 and 10
    const fields = await fieldsOf(ctx.prefix, "c");
    expect([...fields.keys()].filter((f) => f.startsWith("b:")).length).toBe(43);
    const [at, e] = fields.get("c:w")!.split("|");
    expect(e).toBe("0");
    expect(Number(at)).toBe(Math.floor((Math.floor((W0 + 61 * WEEK) / DAY) + 3) / 7));
    console.log("first writes after the late write", after);
  }, 120_000);
});

describe("member deletes and week size records", () => {
  it("lower each shrunk week's record by one, drop an emptied week's, no command more", async () => {
    const ctx = lib.ctx(NOW, "del");
    const weeks = [0, 1, 2, 3].map((k) => W0 + 70 * WEEK + k * WEEK);
    // recorded weeks: written late, each records the members the write adds
    await increment({ ...ctx, now: NOW }, "d", [
      ...weeks
        .slice(0, 3)
        .flatMap((w) => ["a", "b", "c"].map((member) => ({ member, period: "week" as const, at: w + DAY }))),
      { member: "a", period: "week", at: weeks[3]! + DAY },
    ]);
    const key = (w: number) => K.bucket(ctx.prefix, "d", "week", w);
    const before = await fieldsOf(ctx.prefix, "d");
    expect(weeks.map((w) => before.get(`n:${key(w)}`))).toEqual(["3", "3", "3", "1"]);
    // "b" from weeks 1–3 (week 0 keeps it), "a" from week 3 (which it empties); the script loaded
    // by a delete of a member no week holds
    await deleteMember(ctx, "d", "q", { period: "week", from: weeks[0]!, to: weeks[3]! + WEEK - 1 });
    await resetStats(target, TAG);
    await deleteMember({ ...ctx, redis: counted }, "d", "b", {
      period: "week",
      from: weeks[1]!,
      to: weeks[3]! + WEEK - 1,
    });
    const byB = (await statsOf(target, TAG)).byCommand;
    await deleteMember(ctx, "d", "a", { period: "week", from: weeks[3]!, to: weeks[3]! + WEEK - 1 });
    const after = await fieldsOf(ctx.prefix, "d");
    expect(weeks.map((w) => after.get(`n:${key(w)}`))).toEqual(["3", "2", "2", undefined]);
    expect(after.has(`b:${key(weeks[3]!)}`)).toBe(false);
    for (const w of weeks.slice(0, 3))
      expect(Number(after.get(`n:${key(w)}`))).toBe(await command<number>(target, "ZCARD", key(w)));
    // EVALSHA, HMGET (fields and records), 3 ZREMs, one EXISTS of the weeks that lost it (it
    // counts them all: none emptied; an EXISTS each before emptied keys were checked a level at a
    // time), INCR + HSET of the generation (the records in it)
    expect(byB).toEqual({ evalsha: 1, hmget: 1, zrem: 3, exists: 1, incr: 1, hset: 1 });
  }, 60_000);
});
