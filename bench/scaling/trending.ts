/**
 * Trending as distinct members per hour grow, loaded straight into Redis with
 * the service's own key schema (src/trending/keys.ts): 25 hourly buckets of N
 * members each (the 24 finished hours of a 24 h window and the current hour).
 *
 * Every path is measured by its longest Redis script (issue 15's bound: ≤ 50 ms
 * at 1M): SLOWLOG with slowlog-log-slower-than 0 around the call, the EVALSHA
 * entries' durations (a script's whole run), plus commands and round trips
 * from the local Upstash server. The paths, in the order a busy stream meets them:
 * 1. compaction catching up 24 missed hours (24 raw hours of N members);
 * 2. the previous hour raw again (as before minute 5): first read of the hour,
 *    warm read, member lookups (the leader, a member deep in the tail);
 * 3. compaction of that one hour;
 * 4. the same reads once it is compacted.
 */
import type { RespClient } from "../../dev/resp.ts";
import { markOf, registryKeys, streamKeys } from "../../src/trending/keys.ts";
import { hourIndex } from "../../src/time.ts";
import { sample, scriptProbe, timed } from "./measure.ts";
import type { Curve, ScalingInput, Timing } from "./types.ts";

const CHUNK = 10_000;
const WINDOW = 24;
const SENTINEL = "\0err";

export async function zaddMembers(redis: RespClient, key: string, n: number, salt: number): Promise<void> {
  await redis.call("ZADD", key, 0, SENTINEL);
  for (let from = 0; from < n; from += CHUNK) {
    const args: (string | number)[] = ["ZADD", key];
    for (let i = from; i < Math.min(n, from + CHUNK); i++) {
      // skewed counts, so the top is a few members well above the tail
      args.push(1 + Math.floor(1000 / (1 + ((i * 7919 + salt) % n))), `m${i}`);
    }
    await redis.call(...args);
  }
}

export async function trendingScaling(
  input: ScalingInput,
): Promise<{ curves: Curve[]; timings: Timing[]; notes: string[] }> {
  const { redis, upstash, side, prefix, log } = input;
  const curves: Record<string, Curve> = {};
  const curve = (name: string) => (curves[name] ??= { name, nLabel: "distinct members per hour", points: [] });
  const probe = scriptProbe(input, "trending");
  const loading: Timing = {
    name: "loading 25 hourly buckets of N members straight into Redis (bench setup, not the service)",
    points: [],
  };
  const notes: string[] = [];
  const registry = registryKeys(prefix);

  for (const n of input.sizes) {
    const stream = `scale-${n}`;
    const keys = streamKeys(prefix, stream);
    const H = hourIndex(Date.now());
    const hours = Array.from({ length: WINDOW + 1 }, (_, i) => H - WINDOW + i);
    const top = `/v1/trending/${stream}/top?n=10&window=24h`;
    const exactNote = (json: any) => `exact=${json?.exact} maxError=${json?.maxError}`;
    const dropUnions = async () => {
      await redis.call("DEL", ...keys.unionsOf(H));
    };
    const script = (name: string, path: string, method = "GET", describe?: (json: any) => string) =>
      probe.measure(n, name, path, { method, describe });
    const job = (json: any) => JSON.stringify(json?.result ?? json).slice(0, 200);

    log(`trending scaling N=${n}: loading`);
    const load = await timed(async () => {
      const first = keys.bucket(H - WINDOW);
      await zaddMembers(redis, first, n, 0);
      for (const h of hours.slice(1)) await redis.call("COPY", first, keys.bucket(h), "REPLACE");
      for (const h of hours) await redis.call("EXPIRE", keys.bucket(h), 50 * 3600);
      await redis.call("ZADD", registry.names, 0, stream);
      await redis.call("ZADD", registry.seen, H, stream);
      await redis.call("ZADD", registry.dirty, H - WINDOW, stream);
    });
    loading.points.push({ n, ms: load.ms });

    // 1. 24 missed hours, each raw: catch-up in scripts of bounded work
    let runs = 0;
    for (let more = true; more && runs < 5; runs++) {
      const result = await script(
        "compaction catching up 24 raw hours (one run)",
        "/internal/jobs/compact",
        "POST",
        job,
      );
      more = Boolean(result?.result?.more);
    }
    notes.push(
      `Catching up 24 missed hours of ${n.toLocaleString("en-US")} members each took ${runs} compaction run(s).`,
    );

    // 2. the previous hour raw again, as it is until compaction at minute 5
    await redis.call("DEL", keys.bucket(H - 1));
    await zaddMembers(redis, keys.bucket(H - 1), n, 7);
    await redis.call("EXPIRE", keys.bucket(H - 1), 50 * 3600);
    await redis.call("ZADD", registry.dirty, "XX", H - 1, stream);
    // and no run of this hour finished it (the mark the compaction above set)
    await redis.call("ZREM", registry.dirty, markOf(stream));
    await dropUnions();
    const deep = `m${Math.floor(n / 2) + 1}`;
    await script("first read of the hour, previous hour raw (cold)", top, "GET", exactNote);
    await script("warm read, previous hour raw", top, "GET", exactNote);
    await script(
      "member lookup, the leader, previous hour raw",
      `/v1/trending/${stream}/members/m0?window=24h`,
      "GET",
      (j) => `rank ${j?.rank} exact=${j?.rankExact}`,
    );
    await script(
      "member lookup, a member in the tail, previous hour raw",
      `/v1/trending/${stream}/members/${deep}?window=24h`,
      "GET",
      (j) => `rank ${j?.rank}..${j?.rankMax ?? j?.rank} exact=${j?.rankExact}`,
    );
    curve("top-10 / 24 h, warm, previous hour raw (HTTP latency)").points.push({
      n,
      point: await sample(upstash, side, "GET", top, n >= 1_000_000 ? 5 : 10, { note: exactNote }),
    });

    // 3. compaction of that one hour
    await script("compaction of the previous hour (one run)", "/internal/jobs/compact", "POST", job);

    // 4. reads once it is compacted
    await dropUnions();
    await script("first read of the hour, previous hour compacted (cold)", top, "GET", exactNote);
    await script("warm read, previous hour compacted", top, "GET", exactNote);
    await script(
      "member lookup, the leader, compacted",
      `/v1/trending/${stream}/members/m0?window=24h`,
      "GET",
      (j) => `rank ${j?.rank} exact=${j?.rankExact}`,
    );
    await script(
      "member lookup, a member in the tail, compacted",
      `/v1/trending/${stream}/members/${deep}?window=24h`,
      "GET",
      (j) => `count ${j?.count} rank ${j?.rank}..${j?.rankMax ?? j?.rank} exact=${j?.rankExact}`,
    );
    curve("top-10 / 24 h, warm, compacted (HTTP latency)").points.push({
      n,
      point: await sample(upstash, side, "GET", top, 10, { note: exactNote }),
    });

    // 5. the worst legal read: a tie mass at the boundary (a stream whose current hour holds N
    // members, every one at 1), deeper than the threshold read goes
    const flat = streamKeys(prefix, `flat-${n}`).bucket(H);
    await redis.call("ZADD", flat, 0, SENTINEL);
    for (let from = 0; from < n; from += CHUNK) {
      const args: (string | number)[] = ["ZADD", flat];
      for (let i = from; i < Math.min(n, from + CHUNK); i++) args.push(1, `f${i}`);
      await redis.call(...args);
    }
    await script(
      "top-10 with a tie mass of N members at the boundary",
      `/v1/trending/flat-${n}/top?n=10&window=1h`,
      "GET",
      exactNote,
    );
    await redis.call("UNLINK", flat);

    // Free the memory before the next size.
    await redis.call("UNLINK", ...hours.map((h) => keys.bucket(h)), keys.cuts, ...keys.unionsOf(H), keys.scratch);
    for (const r of [registry.names, registry.seen, registry.dirty]) await redis.call("ZREM", r, stream);
    await redis.call("ZREM", registry.dirty, markOf(stream));
    if (hourIndex(Date.now()) !== H)
      notes.push(`The clock crossed an hour during trending N=${n}; its figures mix two hours.`);
  }
  probe.print();
  notes.push(
    "Trending (issue 15): no script copies a raw hour. Until compaction has trimmed the previous hour, reads page it as a set of its own beside the union of the older, trimmed hours and the current hour (threshold algorithm); compaction trims an hour with at most `TRENDING_KEEP` member moves (ZRANGESTORE of the top keep + UNLINK for a big hour) and stops a script after 10,000 moves; member lookups read a few ranges, never a merge.",
  );
  return { curves: Object.values(curves), timings: [...probe.timings(), loading], notes };
}
