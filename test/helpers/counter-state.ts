/**
 * Redis state of one hour counter for the member-delete tests (counters-delete-model,
 * counters-delete-cases): its index fields, listed hours and rollups, the claim the top-down delete
 * rests on, rollup sums, and time travel for expiry.
 */
import type { Ctx } from "../../src/context.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { memberScript } from "../../src/counters/read-scripts.ts";
import { memberSource } from "../../src/counters/reads.ts";
import { asList } from "../../src/redis/script.ts";
import { DAY, HOUR, periodEnd, periodStart } from "../../src/time.ts";
import type { LibraryTest } from "./library.ts";
import { command, keysUnder } from "./upstash-rest.ts";

/** `2026112012` -> its epoch ms. */
export const hourOf = (label: string) =>
  Date.UTC(+label.slice(0, 4), +label.slice(4, 6) - 1, +label.slice(6, 8), +label.slice(8));

export interface State {
  fields: Record<string, string>;
  /** Listed hour keys by their start: member -> score (zeros included). */
  hours: Map<number, Map<string, number>>;
  /** Listed rollup keys (existing or not): key -> member -> score. */
  rollups: Map<string, Map<string, number>>;
  /** Listed keys (hours and rollups) that do not exist (a sorted set never exists empty). */
  gone: string[];
}

/**
 * Listed keys that are gone though their recorded expiry is none (`b:` 0): a delete that empties a
 * key must drop it from the index, or the next write would trust the record and give the key made
 * again no expiry. (A key with a recorded expiry may be listed after it expired: writes check.)
 */
export function goneButListed(st: State): string[] {
  return st.gone.filter((k) => st.fields[`b:${k}`] === "0");
}

/** The hours a rollup key sums: [start, end). */
export function spanOf(key: string): [number, number] {
  const label = key.slice(key.lastIndexOf(":") + 1);
  if (key.includes(":by-quarter:")) {
    const s = Date.UTC(+label.slice(0, 4), +label.slice(4, 6) - 1, +label.slice(6, 8), +label.slice(9));
    return [s, s + 6 * HOUR];
  }
  if (key.includes(":by-day:")) {
    const s = Date.UTC(+label.slice(0, 4), +label.slice(4, 6) - 1, +label.slice(6, 8));
    return [s, s + DAY];
  }
  const s = Date.UTC(+label.slice(0, 4), +label.slice(4, 6) - 1, 1);
  return [s, periodEnd("month", s)];
}

/**
 * Members a listed rollup holds (at any score, 0 included) that no listed hour below it holds: a
 * member delete that takes a partial rollup to 0 keeps the member only while a part still holds it.
 */
export function ghosts(st: State, withQuarters: boolean): string[] {
  const out: string[] = [];
  for (const [key, held] of st.rollups) {
    if (!withQuarters && key.includes(":by-quarter:")) continue;
    const [a, b] = spanOf(key);
    for (const m of held.keys()) {
      let found = false;
      for (const [h, members] of st.hours) if (h >= a && h < b && members.has(m)) found = true;
      if (!found) out.push(`${key.slice(-20)} holds ${m} at ${held.get(m)}, no hour of it does`);
    }
  }
  return out;
}

/** Every listed rollup's members against the sums of its hours (0 counted as absent). */
export function rollupMismatches(st: State, withQuarters: boolean): string[] {
  const out: string[] = [];
  const nonZero = (m: Map<string, number>) =>
    JSON.stringify(Object.fromEntries([...m].filter(([, v]) => v !== 0).sort()));
  for (const [key, held] of st.rollups) {
    if (!withQuarters && key.includes(":by-quarter:")) continue;
    const [a, b] = spanOf(key);
    const sums = new Map<string, number>();
    for (const [h, members] of st.hours)
      if (h >= a && h < b) for (const [m, v] of members) sums.set(m, (sums.get(m) ?? 0) + v);
    if (nonZero(held) !== nonZero(sums)) out.push(`${key.slice(-20)}: ${nonZero(held)} != ${nonZero(sums)}`);
  }
  return out;
}

export const hoursJson = (h: Map<number, Map<string, number>>) =>
  [...h]
    .filter(([, m]) => m.size > 0)
    .sort(([a], [b]) => a - b)
    .map(([t, m]) => [new Date(t).toISOString(), Object.fromEntries([...m].sort())]);

/** The member read past the union bound (maxEntries 0: edgeSum), as counters-edges.test.ts reads it. */
export async function memberPastBound(c: Ctx, name: string, member: string, from: number, to: number) {
  const { keys, args } = memberSource(c, name, { period: "hour", from, to });
  const reply = asList(await memberScript.run<unknown[]>(c.redis, keys, { ...args, maxEntries: 0, member }));
  return reply.length === 0 ? null : Number(reply[0]);
}

/** The helpers bound to a test file's Redis and prefix. */
export function counterState(lib: LibraryTest) {
  const { target, prefix } = lib;

  async function zscores(key: string): Promise<Map<string, number>> {
    const flat = await command<string[]>(target, "ZRANGE", key, 0, -1, "WITHSCORES");
    const out = new Map<string, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i] as string, Number(flat[i + 1]));
    return out;
  }

  async function stateOf(name: string): Promise<State> {
    const flat = await command<string[]>(target, "HGETALL", counterKeys.index(prefix, name));
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
    const hours = new Map<number, Map<string, number>>();
    const rollups = new Map<string, Map<string, number>>();
    const gone: string[] = [];
    for (const f of Object.keys(fields)) {
      if (!f.startsWith("b:")) continue;
      const key = f.slice(2);
      const m = /:hour:(\d{10})$/.exec(key);
      if (m) {
        const s = await zscores(key);
        if (s.size > 0) hours.set(hourOf(m[1]!), s);
        else gone.push(key);
      } else if (key.includes(":hour:by-")) {
        const s = await zscores(key);
        rollups.set(key, s);
        if (s.size === 0) gone.push(key);
      }
    }
    return { fields, hours, rollups, gone };
  }

  /**
   * The claim the pruning rests on (checked only in a life with `s` or `q`): a listed rollup (or one
   * of a listed hour, listed or not) that lacks a member and has no `z:` mark has no listed hour
   * below it holding that member. Returns the violations.
   */
  function claimViolations(st: State, name: string): string[] {
    const out: string[] = [];
    if (!("s" in st.fields) && !("q" in st.fields)) return out;
    const levels = ("q" in st.fields ? ["quarter", "day", "month"] : ["day", "month"]) as (
      "quarter" | "day" | "month"
    )[];
    for (const [hour, members] of st.hours) {
      for (const level of levels) {
        const start = level === "quarter" ? Math.floor(hour / (6 * HOUR)) * 6 * HOUR : periodStart(level, hour);
        const key = counterKeys.rollup(prefix, name, "hour", level, start);
        if (`z:${key}` in st.fields) continue;
        const held = st.rollups.get(key);
        for (const m of members.keys())
          if (!held?.has(m))
            out.push(`${new Date(hour).toISOString()} holds ${m}, its ${level} ${key.slice(-11)} lacks it`);
      }
    }
    return out;
  }

  /**
   * Moves Redis `ms` forward for `name`'s keys: each key with an expiry loses `ms` of it, and one
   * whose expiry falls within them is gone, as Redis would have it after `ms` of real time.
   */
  async function advance(name: string, ms: number) {
    for (const key of await keysUnder(target, `${prefix}:counters:${name}`)) {
      const left = await command<number>(target, "PTTL", key);
      if (left < 0) continue;
      if (left <= ms) await command(target, "UNLINK", key);
      else await command(target, "PEXPIRE", key, left - ms);
    }
  }

  /** Listed keys with an expiry shorter than one of the keys they sum (the premise of the pruning). */
  async function outlivedRollups(st: State): Promise<string[]> {
    const out: string[] = [];
    const pttl = (k: string) => command<number>(target, "PTTL", k);
    for (const key of st.rollups.keys()) {
      const mine = await pttl(key);
      if (mine === -1) continue;
      const [a, b] = spanOf(key);
      for (const h of st.hours.keys()) {
        if (h < a || h >= b) continue;
        const hourKey = counterKeys.bucket(prefix, key.split(":hour:")[0]!.split(":").pop()!, "hour", h);
        const theirs = await pttl(hourKey);
        if (theirs === -1 || theirs > mine) out.push(`${key.slice(-20)} (${mine}) < ${hourKey.slice(-10)} (${theirs})`);
      }
    }
    return out;
  }

  /**
   * What a member delete of one hour did in releases before it read the parts outside a partial
   * rollup its sum took to 0 (state such a release left, which this one still reads): the hour
   * loses `member`, and its quarter, day and month, each brought to exactly 0 by that (the caller's
   * data must be so), drop it and are marked `z:`; a key left empty leaves the index; `late` moves.
   */
  async function olderZeroDelete(name: string, member: string, hour: number) {
    const index = counterKeys.index(prefix, name);
    const hourKey = counterKeys.bucket(prefix, name, "hour", hour);
    const gone = Number(await command<string>(target, "ZSCORE", hourKey, member));
    const forget = async (key: string) => {
      if ((await command<number>(target, "EXISTS", key)) === 0) await command(target, "HDEL", index, `b:${key}`);
    };
    await command(target, "ZREM", hourKey, member);
    await forget(hourKey);
    for (const level of ["quarter", "day", "month"] as const) {
      const start = level === "quarter" ? Math.floor(hour / (6 * HOUR)) * 6 * HOUR : periodStart(level, hour);
      const key = counterKeys.rollup(prefix, name, "hour", level, start);
      const held = Number(await command<string>(target, "ZSCORE", key, member));
      if (held !== gone) throw new Error(`olderZeroDelete: ${key} holds ${member} at ${held}, not ${gone}`);
      await command(target, "ZREM", key, member);
      await forget(key);
      await command(target, "HSET", index, `z:${key}`, 1);
    }
    await command(target, "HSET", index, "late", await command<number>(target, "INCR", counterKeys.seq(prefix)));
  }

  return { zscores, stateOf, claimViolations, advance, outlivedRollups, olderZeroDelete };
}
