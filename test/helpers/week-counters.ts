/**
 * The setup the `period=week` read tests share (counters-week-reads, counters-week-cap, review 12
 * and 13): one place for the 400-day calendar their counts are reasoned on, and for the client whose
 * commands the local Upstash server counts apart (its token carries a tag), so that a read's cost is
 * measured the same way in every file.
 *
 *   const { lib, target, measure, warm } = weekCounters("cweek", 30_000);
 */
import { expect } from "vitest";
import type { Ctx } from "../../src/context.ts";
import { memberOf, ranked, scoreRange, sorted } from "../../src/counters/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, periodStart } from "../../src/time.ts";
import { libraryTest } from "./library.ts";
import { settled } from "./settled.ts";
import { resetStats, statsOf } from "./upstash-rest.ts";

export const WEEK = 7 * DAY;
/** A Monday noon: 400 days back is a Sunday, so a range ending now touches 59 weeks. */
export const NOW = Date.UTC(2027, 5, 14, 12);
export const FROM = NOW - 400 * DAY;
/** The starts of the 59 weeks from FROM to NOW (58 finished and the current one). */
export const weeks: readonly number[] = (() => {
  const out: number[] = [];
  for (let w = periodStart("week", FROM); w <= periodStart("week", NOW); w += WEEK) out.push(w);
  return out;
})();

/**
 * A library test (`libraryTest(label)`) and a second client on the same server whose commands are
 * counted under a tag of its own. `oneRequest` (default true): `measure` also asserts that the read
 * was sent as one request.
 */
export function weekCounters(label: string, timeoutMs: number, options: { oneRequest?: boolean } = {}) {
  const lib = libraryTest(label, { timeoutMs });
  const { target } = lib;
  const tag = `${label}-${Math.random().toString(36).slice(2, 8)}`;
  const counted = createRedis({ url: target.url, token: `${target.token}.${tag}`, timeoutMs });
  const oneRequest = options.oneRequest ?? true;

  /** One call through the counting client: what it answered or refused, and its commands. */
  async function measure<T>(call: (c: Ctx) => Promise<T>, ctx: Ctx) {
    await resetStats(target, tag);
    const got = await settled(call({ ...ctx, redis: counted }));
    const s = await statsOf(target, tag);
    if (oneRequest) expect(s.requests).toBe(1);
    return { got, commands: s.commands, by: s.byCommand };
  }

  /** Loads every read script (a first call pays the script's upload: two requests). */
  async function warm(ctx: Ctx) {
    const c = { ...ctx, redis: counted };
    const opts = { period: "week" as const, from: ctx.now - 14 * DAY };
    await ranked(c, "empty", "top", 1, opts);
    await memberOf(c, "empty", "x", opts).catch(() => undefined);
    await scoreRange(c, "empty", opts);
    await sorted(c, "empty", opts);
  }

  return { lib, target, tag, counted, measure, warm };
}

export type Agg = "sum" | "min" | "max";
/** week start -> member -> score: what the tests wrote, to check reads against. */
export type WeekModel = Map<number, Map<string, number>>;

/**
 * The union of the model's weeks whose starts fall in the weeks of `from`..`to` (any times: each is
 * taken to its week's start), as ZUNIONSTORE … AGGREGATE `agg` makes it.
 */
export function unionOf(model: WeekModel, from: number, to: number, agg: Agg): Map<string, number> {
  const first = periodStart("week", from);
  const last = periodStart("week", to);
  const out = new Map<string, number>();
  for (const [week, members] of model) {
    if (week < first || week > last) continue;
    for (const [member, score] of members) {
      addTo(out, member, score, agg);
    }
  }
  return out;
}

/** `score` added into `out` as ZUNION's AGGREGATE `agg` would: the models' one rule of union. */
export function addTo(out: Map<string, number>, member: string, score: number, agg: Agg): void {
  const had = out.get(member);
  out.set(
    member,
    had === undefined
      ? score
      : agg === "sum"
        ? had + score
        : agg === "min"
          ? Math.min(had, score)
          : Math.max(had, score),
  );
}

/** Ascending as Redis orders a sorted set: score, then member bytes (ASCII members here). */
export function ascending(u: Map<string, number>): { member: string; score: number }[] {
  return [...u]
    .map(([member, score]) => ({ member, score }))
    .sort((a, b) => a.score - b.score || (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
}

/** The ZCARD of each key in one EVAL (the local server locks only declared keys). */
export const cardsLua = `local out = {} for i = 1, #KEYS do out[i] = redis.call('ZCARD', KEYS[i]) end return out`;
