/**
 * Trending top-10 over 24 h as distinct members per hour grow, loaded straight
 * into Redis with the service's own key schema (src/trending/keys.ts): 25
 * hourly buckets of N members each (the 24 finished hours of the window and
 * the current hour), the stream registered as due for compaction.
 */
import type { RespClient } from "../../dev/resp.ts";
import { registryKeys, streamKeys } from "../../src/trending/keys.ts";
import { hourIndex } from "../../src/time.ts";
import { sample, timed } from "./measure.ts";
import type { Curve, ScalingInput, Timing } from "./types.ts";

const CHUNK = 10_000;
const WINDOW = 24;
const SMALL_CURRENT = 1000;

async function zaddMembers(redis: RespClient, key: string, n: number, salt: number): Promise<void> {
  for (let from = 0; from < n; from += CHUNK) {
    const args: (string | number)[] = ["ZADD", key];
    for (let i = from; i < Math.min(n, from + CHUNK); i++) {
      // skewed counts, so the top is a few members well above the tail
      args.push(1 + Math.floor(1000 / (1 + ((i * 7919 + salt) % n))), `m${i}`);
    }
    await redis.call(...args);
  }
}

export async function trendingScaling(input: ScalingInput): Promise<{ curves: Curve[]; timings: Timing[]; notes: string[] }> {
  const { redis, upstash, side, prefix, log } = input;
  const curves: Record<string, Curve> = {};
  const curve = (name: string) => (curves[name] ??= { name, nLabel: "distinct members per hour", points: [] });
  const compaction: Timing = { name: "trending compaction of one stream (24 finished hours), one job call", points: [] };
  const loading: Timing = { name: "loading 25 hourly buckets of N members straight into Redis (bench setup, not the service)", points: [] };
  const notes: string[] = [];
  const registry = registryKeys(prefix);

  for (const n of input.sizes) {
    const stream = `scale-${n}`;
    const keys = streamKeys(prefix, stream);
    const H = hourIndex(Date.now());
    const hours = Array.from({ length: WINDOW + 1 }, (_, i) => H - WINDOW + i);
    const top = `/v1/trending/${stream}/top?n=10&window=24h`;
    const exactNote = (json: any) => `exact=${json?.exact} maxError=${json?.maxError}`;
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
    const big = n >= 1_000_000;
    // Cold: the cached union of the finished hours is missing, as on the first read of an hour.
    const dropUnion = async () => {
      await redis.call("DEL", keys.union(WINDOW, H));
    };
    log(`trending scaling N=${n}: reads before compaction`);
    curve("top-10 before compaction, cold (union built)").points.push({ n, point: await sample(upstash, side, "GET", top, big ? 1 : 3, { before: dropUnion, note: exactNote }) });
    curve("top-10 before compaction, warm (union cached)").points.push({ n, point: await sample(upstash, side, "GET", top, big ? 5 : 10, { note: exactNote }) });
    log(`trending scaling N=${n}: compaction`);
    upstash.reset(side.tag);
    const job = await timed(() => fetch(`${side.url}/internal/jobs/compact`, { method: "POST", headers: { authorization: side.authorization } }).then(async (r) => ({ status: r.status, body: await r.text() })));
    const jobCost = upstash.stats(side.tag);
    if (job.value.status !== 200) throw new Error(`compact job: ${job.value.status} ${job.value.body.slice(0, 300)}`);
    compaction.points.push({ n, ms: job.ms, detail: `${jobCost.requests} round trips, ${jobCost.commands} commands; ${job.value.body.slice(0, 160)}` });
    log(`trending scaling N=${n}: reads after compaction`);
    curve("top-10 after compaction, current hour holds N").points.push({ n, point: await sample(upstash, side, "GET", top, big ? 5 : 10, { note: exactNote }) });
    // The current hour is live (never compacted); hold it at 1k to see what the finished hours cost alone.
    await redis.call("DEL", keys.bucket(H));
    await zaddMembers(redis, keys.bucket(H), Math.min(n, SMALL_CURRENT), 1);
    curve(`top-10 after compaction, current hour ${SMALL_CURRENT / 1000}k`).points.push({ n, point: await sample(upstash, side, "GET", top, 10, { note: exactNote }) });
    // Compaction keeps a union a read built before it ran (its counts and bound were true when
    // built) until the hour ends or a late event deletes it; here it is rebuilt from the trimmed hours.
    await dropUnion();
    curve(`top-10 after compaction, union rebuilt, current hour ${SMALL_CURRENT / 1000}k`).points.push({ n, point: await sample(upstash, side, "GET", top, 10, { note: exactNote }) });
    // Free the memory before the next size.
    const streamKeysNow = [...hours.map((h) => keys.bucket(h)), keys.cuts, keys.union(WINDOW, H), keys.scratch];
    await redis.call("UNLINK", ...streamKeysNow);
    for (const r of [registry.names, registry.seen, registry.dirty]) await redis.call("ZREM", r, stream);
    if (hourIndex(Date.now()) !== H) notes.push(`The clock crossed an hour during trending N=${n}; its figures mix two hours.`);
  }
  notes.push(
    "Trending reads build the window's union of finished hours only when it is missing (cold: the first read of an hour, or after a late event into one of its hours); compaction precomputes the 24 h and 48 h unions when no read has built them yet. A warm read pages the union and the current hour (threshold algorithm), so its cost does not grow with the members per hour.",
  );
  return { curves: Object.values(curves), timings: [compaction, loading], notes };
}
