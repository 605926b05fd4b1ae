/**
 * Issue 15 point 5 for counters: every path by its longest Redis script (SLOWLOG) and its
 * commands per call, at N = 10k / 100k / 1M members, loaded straight into Redis with the
 * library's key schema (src/counters/keys.ts) after one increment through the API.
 *
 * - A plain counter of N members: increment (known and new member), top 10 and top 1,000 (the
 *   most `n` allows), one member with its ranks, a score range at the largest limit (1,000,
 *   counting all N), `sorted` (refused with 400 `too_many_members` above 10,000: the refusal is
 *   what is measured there), delete a member, delete the counter (admin).
 * - A `period=day` counter with the same N members in every day bucket and month rollup of the
 *   last 400 days: top over today (one bucket, read in place), top over the 7 finished days
 *   before today uncached (a write into a finished day first moves the cache generation on, so
 *   the read builds its union — ZUNIONSTORE over 7 keys, linear in their 7N members — while 7N ≤
 *   MAX_UNION_ENTRIES, and reads the 7 days by the threshold algorithm past it) and cached (the
 *   next read), top 10 over the 8 days to now (first read: caches the 7 days before today, or
 *   reads all 8 by the threshold algorithm past the bound; later reads: the threshold algorithm
 *   over that union and today's bucket), one member over 400 days ending now (an unfinished range
 *   of the calendar keys `decompose` gives, src/counters/calendar.ts: once its keys hold more
 *   than MAX_UNION_ENTRIES, after the ZCARDs that show it, the score alone, ranks null: each
 *   edge month read as its days in range or as its rollup minus the days outside, whichever has
 *   fewer live keys, src/counters/edges.ts `edgeSum`; here no day outside the range is
 *   listed, so each edge month is one rollup ZSCORE, and as the template copied into every key
 *   makes no rollup the sum of its days, the score shown is not the days' sum), the same member
 *   over the 7 finished days (unioned under the bound, the score
 *   alone past it), and deleting a member over the same 400 days (one call: the member is in every
 *   day, so every one of the 414 keys may hold it, within the 1,750-key limit).
 * - The worst legal unions, the same data at every N: 7 finished days whose members never repeat,
 *   2,857 a day (19,999 members: the largest union MAX_UNION_MEMBERS allows; top 10 uncached, then
 *   a member) and 14,285 a day (past it: a member's score alone; a top 10 by the threshold
 *   algorithm, which no leader settles, refused after its budget).
 *
 * Runnable alone: `node bench/run.ts --only=scaling-counters --no-scenarios --no-rtt --no-cpu --no-jobs`.
 */
import { decompose } from "../../src/counters/calendar.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { DAY, dayStart, periodStart } from "../../src/time.ts";
import { call } from "../lib/measure.ts";
import { scriptProbe } from "./measure.ts";
import type { ScalingInput, Timing } from "./types.ts";

const CHUNK = 10_000;
/**
 * The unions over N-member keys run for seconds at 1M; should one outlast the service's Redis
 * timeout (60 s in the bench), its row shows the error status and the part goes on.
 */
const SLOW = [500, 502, 503, 504];

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export async function counterScaling(input: ScalingInput): Promise<{ timings: Timing[]; notes: string[] }> {
  const { redis, side, prefix, log } = input;
  const probe = scriptProbe(input, "counters");
  const notes: string[] = [];
  const ok = async (method: string, path: string, body?: unknown) => {
    const r = await call(side, method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
    return r.json;
  };
  const template = `${prefix}:bench:counter-template`;
  const unlinkCounter = async (name: string) => {
    let cursor = "0";
    do {
      const reply = (await redis.call("SCAN", cursor, "MATCH", `${prefix}:counters:${name}:*`, "COUNT", 1000)) as [
        Buffer,
        Buffer[],
      ];
      cursor = reply[0].toString();
      if (reply[1].length) await redis.call("UNLINK", ...reply[1]);
    } while (cursor !== "0");
    await redis.call("UNLINK", counterKeys.plain(prefix, name));
    await redis.call("ZREM", counterKeys.names(prefix), name);
    await redis.call("HDEL", counterKeys.expiry(prefix), name);
  };
  const now = Date.now();
  const today = dayStart(now);
  const week = `period=day&from=${iso(today - 7 * DAY)}&to=${iso(today - DAY)}`;
  const longFrom = today - 399 * DAY;

  // Every script once on a small counter: no NOSCRIPT fallback in the measured calls.
  const warm = "scale-cw";
  await ok("POST", `/v1/counters/${warm}/incr`, { member: "a" });
  await ok("POST", `/v1/counters/${warm}/incr`, { member: "b", period: "day", at: today - DAY });
  await ok("POST", `/v1/counters/${warm}/incr`, { member: "b", period: "day", at: today - 2 * DAY });
  for (const path of [
    "top?n=10",
    "members/a",
    "range?limit=10",
    "sorted",
    `top?n=10&${week}`,
    `members/b?period=day&from=${iso(longFrom)}`,
  ])
    await ok("GET", `/v1/counters/${warm}/${path}`);
  await ok("DELETE", `/v1/counters/${warm}/members/a`);
  await ok("DELETE", `/v1/counters/${warm}`);

  for (const n of input.sizes) {
    const measure = (
      name: string,
      path: string,
      method = "GET",
      describe?: (j: any) => string,
      body?: unknown,
      accept: number[] = [],
    ) =>
      probe.measure(n, `counter (N members${name.startsWith("day") ? " a day" : ""}): ${name}`, path, {
        method,
        describe,
        body,
        accept,
        // reads 3 times (the median counts), except uncached unions and first reads (a repeat would be cached)
        repeat: method === "GET" && !/uncached|first read/.test(name) ? 3 : 1,
      });
    const items = (j: any) => `items=${j?.items?.length}${j?.count === undefined ? "" : ` count=${j.count}`}`;
    const mid = `u${n >> 1}`;

    log(`counters N=${n}: loading the template set`);
    await redis.call("DEL", template);
    for (let from = 0; from < n; from += CHUNK) {
      const args: (string | number)[] = ["ZADD", template];
      for (let i = from; i < Math.min(n, from + CHUNK); i++) args.push(1 + ((i * 7919) % 1_000_003), `u${i}`);
      await redis.call(...args);
    }

    // --- the plain counter
    const plain = `scale-c-${n}`;
    const base = `/v1/counters/${plain}`;
    await ok("POST", `${base}/incr`, { member: "u0" });
    await redis.call("COPY", template, counterKeys.plain(prefix, plain), "REPLACE");
    const score = (j: any) => `score=${j?.score} rank=${j?.rank}`;
    await measure("plain: increment, known member", `${base}/incr`, "POST", undefined, { member: mid });
    await measure(
      "plain: sorted (the whole counter: 10,000 members at most, else 400 too_many_members)",
      `${base}/sorted`,
      "GET",
      (j) => (j?.items ? items(j) : String(j?.error?.code ?? "")),
      undefined,
      [400],
    );
    await measure("plain: increment, new member", `${base}/incr`, "POST", undefined, { member: `new-${n}` });
    await measure("plain: top 10", `${base}/top?n=10`, "GET", items);
    await measure("plain: top 1,000", `${base}/top?n=1000`, "GET", items);
    await measure("plain: one member with its ranks", `${base}/members/${mid}`, "GET", score);
    await measure("plain: score range -inf..+inf, limit 1,000", `${base}/range?limit=1000`, "GET", items);
    await measure("plain: delete a member", `${base}/members/u${n >> 2}`, "DELETE");
    await measure("plain: delete the counter (admin)", base, "DELETE");
    await unlinkCounter(plain);

    // --- the day counter: N members in every day bucket and month rollup of the last 400 days
    const daily = `scale-cd-${n}`;
    const dbase = `/v1/counters/${daily}`;
    await ok("POST", `${dbase}/incr`, { member: "u0", period: "day" });
    const parts = decompose("day", periodStart("day", longFrom), today);
    const index = counterKeys.index(prefix, daily);
    log(`counters N=${n}: copying N members into ${parts.length} calendar keys`);
    // the month rollup of every month touched holds the template too, as writes would have made
    // it (a key holds no member its month's rollup lacks: what bounds a union's work before it runs)
    const months = new Set(parts.map((p) => periodStart("month", p.start)));
    const keys = [
      ...parts.map((part) => counterKeys.part(prefix, daily, "day", part.level, part.start)),
      ...[...months].map((m) => counterKeys.part(prefix, daily, "day", "month", m)),
    ];
    for (const key of new Set(keys)) {
      await redis.call("COPY", template, key, "REPLACE");
      await redis.call("HSET", index, `b:${key}`, 0);
    }
    const late = async () => {
      // a write into a finished day moves the counter's cache generation on: the next range read rebuilds its union
      await ok("POST", `${dbase}/incr`, { member: "late", period: "day", at: today - 3 * DAY });
    };
    await measure("day: top 10 over today (one bucket, in place)", `${dbase}/top?n=10&period=day`, "GET", items);
    await late();
    await measure(
      "day: top 10 over 7 finished days, uncached (ZUNIONSTORE of 7 × N)",
      `${dbase}/top?n=10&${week}`,
      "GET",
      (j) => `${items(j)} finished=${j?.range?.finished}`,
      undefined,
      SLOW,
    );
    await measure(
      "day: top 10 over 7 finished days, cached",
      `${dbase}/top?n=10&${week}`,
      "GET",
      (j) => `${items(j)} finished=${j?.range?.finished}`,
    );
    for (const state of [
      "first read (unions the 7 days before today, cached)",
      "later reads (threshold read of the cached union and today's bucket)",
    ])
      await measure(
        `day: top 10 over 8 days to now, ${state}`,
        `${dbase}/top?n=10&period=day&from=${iso(today - 7 * DAY)}`,
        "GET",
        (j) => `${items(j)} finished=${j?.range?.finished}`,
      );
    const scoreOrRefusal = (j: any) =>
      j?.error
        ? String(j.error.code ?? j.error.message ?? "").slice(0, 80)
        : `${score(j)} buckets=${j?.range?.buckets}`;
    await late();
    await measure(
      "day: one member over 7 finished days, uncached (unioned up to 100,000 entries, else its score alone: a ZSCORE per key)",
      `${dbase}/members/${mid}?${week}`,
      "GET",
      scoreOrRefusal,
      undefined,
      [400, ...SLOW],
    );
    for (const state of ["first read", "later reads"])
      await measure(
        `day: one member over 400 days to now (${parts.length} calendar keys of N), ${state}`,
        `${dbase}/members/${mid}?period=day&from=${iso(longFrom)}`,
        "GET",
        scoreOrRefusal,
        undefined,
        [400, ...SLOW],
      );
    await measure(
      `day: delete a member over 400 days (${parts.length} calendar keys)`,
      `${dbase}/members/u${n >> 2}?period=day&from=${iso(longFrom)}`,
      "DELETE",
      undefined,
      undefined,
      [400],
    );
    notes.push(
      `Counters N=${n.toLocaleString("en-US")}: the 400-day range ${iso(longFrom)}..${iso(today)} decomposes into ${parts.length} calendar keys (${parts.filter((p) => p.level === "month").length} month rollups, the rest day buckets), each holding the same N members here.`,
    );
    await unlinkCounter(daily);
    await redis.call("DEL", template);

    // --- the worst legal unions: 7 finished days whose members never repeat (a union's work is
    // in the members it makes; MAX_UNION_MEMBERS bounds them). The same data at every N.
    for (const [per, label] of [
      [2_857, "19,999 distinct members: the largest union the members bound allows, uncached"],
      [14_285, "99,995 distinct members: past the members bound"],
    ] as const) {
      const distinct = `scale-cx-${n}-${per}`;
      const xbase = `/v1/counters/${distinct}`;
      await ok("POST", `${xbase}/incr`, { member: "seed", period: "day", at: today - DAY });
      const xindex = counterKeys.index(prefix, distinct);
      const byMonth = new Map<number, string[]>();
      for (let d = 1; d <= 7; d++) {
        const day = today - d * DAY;
        const key = counterKeys.bucket(prefix, distinct, "day", day);
        const args: (string | number)[] = ["ZADD", key];
        for (let j = 0; j < per; j++) args.push(1 + ((j * 7919) % 1_000_003), `x${d}-${j}`);
        await redis.call(...args);
        await redis.call("HSET", xindex, `b:${key}`, 0);
        const month = periodStart("month", day);
        byMonth.set(month, [...(byMonth.get(month) ?? []), key]);
      }
      // each month's rollup holds what its days hold, as writes would have made it
      for (const [month, keys] of byMonth) {
        const rollup = counterKeys.part(prefix, distinct, "day", "month", month);
        await redis.call("ZUNIONSTORE", rollup, keys.length + 1, rollup, ...keys);
        await redis.call("HSET", xindex, `b:${rollup}`, 0);
      }
      await measure(
        `day: top 10 over 7 finished days of ${label}`,
        `${xbase}/top?n=10&${week}`,
        "GET",
        (j) => (j?.items ? items(j) : String(j?.error?.code ?? "")),
        undefined,
        [400],
      );
      await measure(
        `day: one member over 7 finished days of ${label}`,
        `${xbase}/members/x3-96?${week}`,
        "GET",
        scoreOrRefusal,
        undefined,
        [400],
      );
      await unlinkCounter(distinct);
    }
  }
  probe.print();
  notes.push(
    "Counters (`--only=scaling-counters`): N = members of the plain counter, and members in each day bucket / month rollup of the day counter. A range read of several keys is a ZUNIONSTORE over them, linear in their total members, so a read first sums the keys' ZCARDs and unions at most MAX_UNION_ENTRIES = 100,000 entries: past that, a top-N sum is read from the keys by the threshold algorithm, a member read gives its exact score from a ZSCORE per key without ranks, and every other range read is refused (400 `too_many_entries`).",
  );
  return { timings: probe.timings(), notes };
}
