/**
 * Presence as a room grows to 1M ids: the count read and a heartbeat at each
 * size, and the trim job clearing a room of N idle ids. Ids are loaded with
 * the library's own heartbeat (1,000 ids per script call) from Node, so the
 * room holds exactly what the service writes.
 */
import type { UpstashServer } from "../../dev/upstash-server.ts";
import { heartbeat } from "../../src/presence/presence.ts";
import type { RedisClient } from "../../src/redis/client.ts";
import { inParallel } from "../scenarios.ts";
import type { Side } from "../lib/measure.ts";
import { sample, timed } from "./measure.ts";
import type { Curve, Timing } from "./types.ts";

export interface PresenceScalingInput {
  redis: RedisClient;
  upstash: UpstashServer;
  side: Side;
  prefix: string;
  sizes: number[];
  timeoutSeconds: number;
  log: (msg: string) => void;
}

const BATCH = 1000;

export async function load(
  redis: RedisClient,
  prefix: string,
  room: string,
  from: number,
  to: number,
  now: number,
  tag: string,
): Promise<void> {
  const batches = Math.ceil((to - from) / BATCH);
  await inParallel(batches, 3, async (b) => {
    const start = from + b * BATCH;
    const ids = Array.from({ length: Math.min(BATCH, to - start) }, (_, i) => `${tag}-${start + i}`);
    await heartbeat({ redis, prefix, now }, room, ids, {});
  });
}

export async function presenceScaling(input: PresenceScalingInput): Promise<{ curves: Curve[]; timings: Timing[] }> {
  const { redis, upstash, side, prefix, log } = input;
  const count: Curve = { name: "presence count (GET room)", nLabel: "ids in the room", points: [] };
  const beat: Curve = { name: "presence heartbeat (1 id)", nLabel: "ids in the room", points: [] };
  const trim: Timing = { name: "presence trim job: clearing N idle ids (all job calls)", points: [] };
  const loading: Timing = { name: "loading N ids through the library heartbeat (bench setup)", points: [] };
  const room = "scale-room";
  let loaded = 0;
  for (const n of input.sizes) {
    log(`presence scaling N=${n}: loading`);
    const t = await timed(() => load(redis, prefix, room, loaded, n, Date.now(), "live"));
    loading.points.push({ n, ms: t.ms, detail: `${n - loaded} ids added` });
    loaded = n;
    count.points.push({
      n,
      point: await sample(upstash, side, "GET", `/v1/presence/${room}`, 10, { note: (j) => `online=${j?.online}` }),
    });
    beat.points.push({
      n,
      point: await sample(upstash, side, "POST", `/v1/presence/${room}/heartbeats`, 10, { body: { id: "live-0" } }),
    });

    // A second room whose ids all went idle a little over a timeout ago (recent
    // enough that the trim job still visits it), cleared by the trim job.
    const idleRoom = `idle-${n}`;
    log(`presence scaling N=${n}: idle room and trim`);
    await load(redis, prefix, idleRoom, 0, n, Date.now() - (input.timeoutSeconds + 30) * 1000, "idle");
    let runs = 0;
    let removed = 0;
    upstash.reset(side.tag);
    const maxRuns = Math.ceil(n / 20_000) + 5;
    const job = await timed(async () => {
      while (runs < maxRuns) {
        runs++;
        const res = await fetch(`${side.url}/internal/jobs/trim`, {
          method: "POST",
          headers: { authorization: side.authorization },
        });
        const body = (await res.json()) as { result?: { removed?: number } };
        if (res.status !== 200) throw new Error(`trim job: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        const r = Number(body.result?.removed ?? 0);
        removed += r;
        if (r === 0) break;
      }
    });
    const cost = upstash.stats(side.tag);
    trim.points.push({
      n,
      ms: job.ms,
      detail: `${runs} job runs, ${removed} removed, ${cost.requests} round trips, ${cost.commands} commands`,
    });
  }
  return { curves: [count, beat], timings: [trim, loading] };
}
