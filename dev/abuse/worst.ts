/**
 * The worst legal requests of the abuse run (../abuse.ts), replayed one at a time after the load,
 * three times each: the slowest script each ran, the fastest of the three, so a script slow by
 * itself shows while a scheduling stall of a loaded machine does not.
 */
import type { AbuseKeys } from "../abuse.ts";
import type { RespClient } from "../resp.ts";
import { DAY, isoDay, legitWrite } from "./attacks.ts";
import type { Caller } from "./caller.ts";

type SlowEntry = [number, number, number, (string | Buffer)[]];
export const slowEntries = async (redis: RespClient) =>
  ((await redis.call("SLOWLOG", "GET", "1000")) ?? []) as unknown as SlowEntry[];

/** Each worst request: a label, and a send for attempt 0, 1 or 2 (some vary, so no cache answers). */
function worstRequests(c: Caller, keys: AbuseKeys, today: number): [string, (attempt: number) => Promise<unknown>][] {
  const longAgo = isoDay(today - 399 * DAY);
  return [
    [
      "400-day day-counter range, uncached",
      (a) =>
        c.call(
          "GET",
          `/v1/counters/daily/top?n=100&period=day&from=${longAgo}&to=${isoDay(today - DAY)}&aggregate=${["sum", "min", "max"][a]}`,
          keys.read,
        ),
    ],
    [
      "400-day hourly counter range",
      () => c.call("GET", `/v1/counters/hourly/top?n=100&period=hour&from=${longAgo}&to=${isoDay(today)}`, keys.read),
    ],
    ["400-day histogram", () => c.call("GET", `/v1/histograms/legit?from=${longAgo}&to=${isoDay(today)}`, keys.read)],
    [
      "trending top 100 over a rebuilt 4x h window",
      (a) => c.call("GET", `/v1/trending/legit/top?n=100&window=${45 + a}h`, keys.read),
    ],
    ["trending member lookup", () => c.call("GET", "/v1/trending/legit/members/t7?window=24h", keys.read)],
    [
      "1,000-item day-counter batch",
      (a) =>
        c.call("POST", "/v1/counters/daily/incr", keys.admin, {
          items: Array.from({ length: 1000 }, (_, i) => ({ member: `w${a}-${i}`, period: "day" })),
        }),
    ],
    [
      "1,000 new presence ids",
      (a) =>
        c.call("POST", "/v1/presence/probe/heartbeats", keys.admin, {
          ids: Array.from({ length: 1000 }, (_, i) => `p${a}-${i}`),
        }),
    ],
    [
      "ranking 1,000 named players of a board",
      () =>
        c.call("POST", "/v1/leaderboards/legit/rank", keys.read, {
          players: Array.from({ length: 1000 }, (_, i) => `pl${i}`),
        }),
    ],
    [
      "1,000 trending events of new members",
      (a) =>
        c.call("POST", "/v1/trending/legit/events", keys.admin, {
          events: Array.from({ length: 1000 }, (_, i) => ({ member: `n${a}-${i}` })),
        }),
    ],
  ];
}

/** Writes what the worst requests read, replays each three times alone: [ms, label] of each. */
export async function probeWorst(c: Caller, keys: AbuseKeys, redis: RespClient): Promise<[number, string][]> {
  const today = Date.now();
  const worst = worstRequests(c, keys, today);
  // 50 players joined; the ranking request names 1,000 (the other 950 come back as unknown, at the same cost).
  for (let i = 0; i < 50; i++)
    c.expectStatus(
      "join",
      await c.call("PUT", `/v1/leaderboards/legit/players/pl${i}`, keys.ingest, { name: `P${i}`, score: i }),
      200,
      201,
    );
  await legitWrite(
    c,
    "/v1/counters/hourly/incr",
    {
      items: Array.from({ length: 24 }, (_, h) => ({ member: "x", period: "hour", at: today - h * 3_600_000 })),
    },
    keys.ingest,
  );
  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", "0");
  const probes: [number, string][] = [];
  for (const [label, send] of worst) {
    let best = Infinity;
    for (let attempt = 0; attempt < 3; attempt++) {
      await redis.call("SLOWLOG", "RESET");
      await send(attempt);
      const scripts = (await slowEntries(redis)).filter((e) => /^eval/i.test(String(e[3][0])));
      best = Math.min(best, Math.max(0, ...scripts.map((e) => Number(e[2]) / 1000)));
    }
    probes.push([Math.round(best * 10) / 10, label]);
  }
  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", "10000");
  return probes;
}
