/**
 * The issue-19 paths (signals, history, webhooks, site-wide presence) as the data
 * grows, each by its longest Redis script (SLOWLOG; issue 15's bound: ≤ 50 ms at
 * 1M) and its commands per call. Runnable alone: `node bench/run.ts --only=scaling-signals
 * --no-rtt --no-cpu --no-jobs`.
 *
 * Trending, N = distinct members per hour, loaded straight into Redis with the
 * service's key schema: the 24 finished hours and the current hour hold N members each.
 * - `rising` (candidates: the current hour's top 200) before compaction (24 raw hours, no
 *   union), after compaction cold (no cached 24 h union: one ZMSCORE per baseline hour) and
 *   warm (a top-10 / 24 h read left the union);
 * - `history?hours=48` before and after compaction;
 * - `rising` with only the previous hour raw (as until compaction at minute 5), cold and after a top read;
 * - the `webhooks.trending` job on a stream one webhook subscribes to (entered/left, top 10):
 *   the top-N of the last two finished hours once compaction has trimmed them.
 *
 * Presence, N = ids: `GET /v1/presence/_total` reads one 16-byte record and PFCOUNT of the
 * day's HyperLogLog of ids, whose size is fixed (12 KB dense) whatever N; the number of rooms
 * never enters the read (the trim job sums the rooms it visits anyway), so N counts the
 * distinct ids the HLL holds. `?day=` reads a room's daily bitmap (today: + ZCOUNT of who is
 * online; BITCOUNT grows by N / 8 bytes) or its archived 18-byte record (older days), so N
 * counts the ids in that room. Both are loaded straight into Redis (src/presence/keys.ts).
 */
import { dayKeys, dayNumber, daySlotBit, HEADER_BYTES, roomKeys, siteDayKeys } from "../../src/presence/keys.ts";
import { DAY, dayStart, hourIndex } from "../../src/time.ts";
import { markOf, registryKeys, streamKeys } from "../../src/trending/keys.ts";
import { call } from "../lib/measure.ts";
import { scriptProbe } from "./measure.ts";
import { zaddMembers } from "./trending.ts";
import type { ScalingInput, Timing } from "./types.ts";

const CHUNK = 10_000;
const WINDOW = 24;

export async function signalsScaling(input: ScalingInput): Promise<{ timings: Timing[]; notes: string[] }> {
  const { redis, side, prefix, log } = input;
  const probe = scriptProbe(input, "signals");
  const notes: string[] = [];
  const registry = registryKeys(prefix);

  const measure = (
    n: number,
    name: string,
    path: string,
    method = "GET",
    describe?: (json: any) => string,
    body?: unknown,
    // a read runs once unmeasured first: the first call of a script after start costs the NOSCRIPT fallback
    warm = method === "GET",
  ) => probe.measure(n, name, path, { method, describe, body, warm });
  const risingNote = (j: any) =>
    `candidates=${j?.candidates} items=${j?.items?.length} exact=${j?.exact} maxError=${Number(j?.maxError ?? 0).toFixed(1)}`;
  const historyNote = (j: any) => `points=${j?.points?.length} exact=${j?.exact}`;
  const job = (json: any) => JSON.stringify(json?.result ?? json).slice(0, 200);

  // The job's scripts once, unmeasured, on an empty stream: no NOSCRIPT fallback in the first size's figure.
  const warmHook = { url: "http://127.0.0.1:9/edgestats-bench", events: ["trending.entered", "trending.left"] };
  await call(side, "PUT", "/v1/webhooks/scale-warm", {
    ...warmHook,
    filter: { stream: "sig-warm" },
    secret: "bench-secret-0123456789",
  });
  await call(side, "POST", "/internal/jobs/webhooks.trending");
  await call(side, "DELETE", "/v1/webhooks/scale-warm");

  for (const n of input.sizes) {
    // --- trending: rising, history, webhooks.trending
    const stream = `sig-${n}`;
    const keys = streamKeys(prefix, stream);
    const H = hourIndex(Date.now());
    const hours = Array.from({ length: WINDOW + 1 }, (_, i) => H - WINDOW + i);
    log(`signals N=${n}: loading 25 hours of ${n} members`);
    const first = keys.bucket(H - WINDOW);
    await zaddMembers(redis, first, n, 0);
    for (const h of hours.slice(1, -2)) await redis.call("COPY", first, keys.bucket(h), "REPLACE");
    // the last finished hour and the current one differ from the rest: entered/left and rising have something to find
    await zaddMembers(redis, keys.bucket(H - 1), n, 7);
    await zaddMembers(redis, keys.bucket(H), n, 13);
    for (const h of hours) await redis.call("EXPIRE", keys.bucket(h), 50 * 3600);
    await redis.call("ZADD", registry.names, 0, stream);
    await redis.call("ZADD", registry.seen, H, stream);
    await redis.call("ZADD", registry.dirty, H - WINDOW, stream);
    await redis.call("DEL", ...keys.unionsOf(H));

    const rising = `/v1/trending/${stream}/rising?n=10&baseline=24h`;
    const history = `/v1/trending/${stream}/history?member=m1&hours=48`;
    await measure(n, "rising, 24 raw baseline hours, no union (cold)", rising, "GET", risingNote);
    await measure(n, "history?hours=48, raw hours", history, "GET", historyNote);

    let runs = 0;
    for (let more = true; more && runs < 10; runs++) {
      const r = await call(side, "POST", "/internal/jobs/compact");
      more = Boolean((r.json as any)?.result?.more);
    }
    notes.push(`Signals N=${n.toLocaleString("en-US")}: compaction of the 24 finished hours took ${runs} run(s).`);

    await redis.call("DEL", ...keys.unionsOf(H));
    await measure(n, "rising, compacted, no cached 24 h union (cold)", rising, "GET", risingNote);
    await call(side, "GET", `/v1/trending/${stream}/top?n=10&window=24h`);
    await measure(n, "rising, compacted, warm 24 h union", rising, "GET", risingNote);
    await measure(n, "history?hours=48, compacted", history, "GET", historyNote);

    const hook = `scale-${n}`;
    const put = await call(side, "PUT", `/v1/webhooks/${hook}`, {
      url: "http://127.0.0.1:9/edgestats-bench",
      events: ["trending.entered", "trending.left"],
      filter: { stream },
      n: 10,
      secret: "bench-secret-0123456789",
    });
    if (put.status >= 300) throw new Error(`PUT webhook: ${put.status} ${JSON.stringify(put.json).slice(0, 300)}`);
    await measure(
      n,
      "webhooks.trending job: top-10 of two trimmed hours",
      "/internal/jobs/webhooks.trending",
      "POST",
      job,
    );
    await call(side, "DELETE", `/v1/webhooks/${hook}`);

    // The state of every hour until compaction at minute 5: the previous hour raw, the older ones trimmed.
    await redis.call("DEL", keys.bucket(H - 1));
    await zaddMembers(redis, keys.bucket(H - 1), n, 7);
    await redis.call("DEL", ...keys.unionsOf(H));
    await measure(n, "rising, previous hour raw, no union (cold)", rising, "GET", risingNote);
    await call(side, "GET", `/v1/trending/${stream}/top?n=10&window=24h`);
    await measure(n, "rising, previous hour raw, after a top-10 / 24 h read", rising, "GET", risingNote);

    await redis.call("UNLINK", ...hours.map((h) => keys.bucket(h)), keys.cuts, ...keys.unionsOf(H), keys.scratch);
    for (const r of [registry.names, registry.seen, registry.dirty]) await redis.call("ZREM", r, stream);
    await redis.call("ZREM", registry.dirty, markOf(stream));
    if (hourIndex(Date.now()) !== H)
      notes.push(`The clock crossed an hour during signals N=${n}; its figures mix two hours.`);

    // --- presence: _total and ?day=
    log(`signals N=${n}: loading presence (${n} ids)`);
    const now = Date.now();
    const room = `sig-room-${n}`;
    const rk = roomKeys(prefix, room);
    const today = dayKeys(prefix, room, now).daily;
    const yesterday = dayKeys(prefix, room, now - DAY).daily;
    const site = siteDayKeys(prefix, now);
    const bits = Buffer.alloc(Math.ceil(n / 8), 0xff);
    for (const daily of [today, yesterday]) {
      await redis.call("SETRANGE", daily, HEADER_BYTES, bits);
      await redis.call("BITFIELD", daily, "SET", "u32", 0, n, "SET", "u32", 32, n, "SET", "u32", 64, 1000);
      await redis.call("EXPIRE", daily, 3 * 24 * 3600);
    }
    for (let from = 0; from < n; from += CHUNK) {
      const zargs: (string | number)[] = ["ZADD", rk.seen];
      const hargs: (string | number)[] = ["PFADD", site.active];
      for (let i = from; i < Math.min(n, from + CHUNK); i++) {
        zargs.push(now, `id${i}`);
        hargs.push(`id${i}`);
      }
      await redis.call(...zargs);
      await redis.call(...hargs);
    }
    const old = dayNumber(now) - 10;
    const at = daySlotBit(old);
    await redis.call(
      "BITFIELD",
      rk.days,
      "SET",
      "u16",
      at,
      old,
      "SET",
      "u32",
      at + 16,
      n,
      "SET",
      "u32",
      at + 48,
      1000,
      "SET",
      "u32",
      at + 80,
      n,
      "SET",
      "u32",
      at + 112,
      n,
    );
    const sample = now - dayStart(now) + 1;
    await redis.call("BITFIELD", site.total, "SET", "u32", 0, n, "SET", "u32", 32, 1000, "SET", "u32", 64, n);
    await redis.call("BITFIELD", site.total, "SET", "u32", 96, sample);
    const label = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const dayNote = (j: any) => `peak=${j?.peak} active=${j?.active} new=${j?.new}`;
    await measure(
      n,
      "presence _total (N ids in the day's HLL)",
      "/v1/presence/_total",
      "GET",
      (j) => `online=${j?.online} activeToday=${j?.activeToday}`,
    );
    await measure(
      n,
      "presence ?day=today (N ids in the room)",
      `/v1/presence/${room}?day=${label(now)}`,
      "GET",
      dayNote,
    );
    await measure(
      n,
      "presence ?day=yesterday (N ids in the room)",
      `/v1/presence/${room}?day=${label(now - DAY)}`,
      "GET",
      dayNote,
    );
    await measure(
      n,
      "presence ?day=10 days ago (archived record)",
      `/v1/presence/${room}?day=${label(now - 10 * DAY)}`,
      "GET",
      dayNote,
    );
    await redis.call("UNLINK", today, yesterday, rk.seen, rk.days, site.active, site.total);
  }
  probe.print();
  return { timings: probe.timings(), notes };
}
