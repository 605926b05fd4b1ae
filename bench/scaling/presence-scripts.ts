/**
 * Issue 15 point 5 for presence: every room path by its longest Redis script (SLOWLOG) and its
 * commands per call, N = ids online in one room (10k / 100k / 1M), loaded with the library's own
 * heartbeat (1,000 ids per script call, `load` in presence.ts) so the room holds exactly what
 * the service writes.
 *
 * Paths: heartbeat of a known id and of a new id, the members list (first page and a cursor in
 * the middle, limit 1,000: the most a page returns), leave, one trim run with the room active,
 * history (24 h), the webhooks minute job with a presence.peak webhook on the room, the room list (N rooms in the registry: first page and a cursor in the
 * middle, 1,000 rooms a page), and deleting the room (admin).
 *
 * Runnable alone: `node bench/run.ts --only=scaling-presence-scripts --no-scenarios --no-rtt --no-cpu --no-jobs`.
 */
import { registryKeys, roomKeys } from "../../src/presence/keys.ts";
import type { RedisClient } from "../../src/redis/client.ts";
import { call } from "../lib/measure.ts";
import { scriptProbe } from "./measure.ts";
import { load } from "./presence.ts";
import type { ScalingInput, Timing } from "./types.ts";

const CHUNK = 10_000;
const PEAK_HOOK = {
  url: "http://127.0.0.1:9/edgestats-bench",
  events: ["presence.peak"],
  secret: "bench-secret-0123456789",
};

export async function presenceScriptScaling(
  input: ScalingInput & { loader: RedisClient },
): Promise<{ timings: Timing[]; notes: string[] }> {
  const { redis, side, prefix, log } = input;
  const probe = scriptProbe(input, "presence");
  const rooms = registryKeys(prefix).rooms;

  // the webhooks job's scripts once, unmeasured, on a small room: no NOSCRIPT fallback in the figures
  await call(side, "POST", "/v1/presence/scale-ps-warm/heartbeats", { id: "w" });
  await call(side, "PUT", "/v1/webhooks/scale-peak-warm", { ...PEAK_HOOK, filter: { room: "scale-ps-warm" } });
  await call(side, "POST", "/internal/jobs/webhooks");
  await call(side, "DELETE", "/v1/webhooks/scale-peak-warm");
  await call(side, "DELETE", "/v1/presence/scale-ps-warm");

  for (const n of input.sizes) {
    const room = `scale-ps-${n}`;
    const base = `/v1/presence/${room}`;
    const keys = roomKeys(prefix, room);
    log(`presence scripts N=${n}: loading`);
    await load(input.loader, prefix, room, 0, n, Date.now(), "live");
    const measure = (name: string, path: string, method = "GET", describe?: (j: any) => string, body?: unknown) =>
      probe.measure(
        n,
        `presence (N ${path.startsWith("/v1/presence?") ? "rooms listed" : "ids in the room"}): ${name}`,
        path,
        {
          method,
          describe,
          body,
          warm: method === "GET",
          repeat: method === "GET" ? 3 : 1,
        },
      );
    const beat = (j: any) => `online=${j?.online} new=${j?.new}`;
    const page = (j: any) => `members=${j?.members?.length} next=${j?.nextCursor ? "yes" : "no"}`;

    // the first heartbeat of a script after start costs the NOSCRIPT fallback: one unmeasured
    await call(side, "POST", `${base}/heartbeats`, { id: "live-1" });
    await measure("heartbeat, known id", `${base}/heartbeats`, "POST", beat, { id: "live-0" });
    await measure("heartbeat, new id", `${base}/heartbeats`, "POST", beat, { id: `fresh-${n}` });
    await measure("members, first page (limit 1,000)", `${base}/members?limit=1000`, "GET", page);
    const [member, score] = ((await redis.call("ZRANGE", keys.seen, n >> 1, n >> 1, "WITHSCORES")) as Buffer[]).map(
      String,
    );
    await measure(
      "members, cursor in the middle (limit 1,000)",
      `${base}/members?limit=1000&cursor=${score}-${member}`,
      "GET",
      page,
    );
    await call(side, "DELETE", `${base}/members/live-3`);
    await measure("leave (one id)", `${base}/members/live-2`, "DELETE");
    await measure("trim job, one run, room active", "/internal/jobs/trim", "POST", (j) =>
      JSON.stringify(j?.result ?? j).slice(0, 160),
    );
    await measure("history (24 h)", `${base}/history?hours=24`, "GET", (j) => `points=${j?.points?.length}`);

    // The webhooks minute job with one presence.peak subscription to this room: the peak check
    // and the delivery attempt (to a local port nothing listens on) of the event it queues.
    await call(side, "PUT", `/v1/webhooks/scale-peak-${n}`, { ...PEAK_HOOK, filter: { room } });
    await measure(
      "webhooks minute job, presence.peak subscribed to this room",
      "/internal/jobs/webhooks",
      "POST",
      (j) => JSON.stringify(j?.result ?? j).slice(0, 160),
    );
    await call(side, "DELETE", `/v1/webhooks/scale-peak-${n}`);

    // N rooms in the room list (registry entries only, one ms apart, a day ago: listed, not due)
    log(`presence scripts N=${n}: ${n} rooms in the registry`);
    const top = Date.now() - 86_400_000;
    for (let from = 0; from < n; from += CHUNK) {
      const args: (string | number)[] = ["ZADD", rooms];
      for (let i = from; i < Math.min(n, from + CHUNK); i++) args.push(top - i, `listed-${i}`);
      await redis.call(...args);
    }
    const rlist = (j: any) => `rooms=${j?.rooms?.length} next=${j?.nextCursor ? "yes" : "no"}`;
    await measure("room list, first page (1,000 rooms)", "/v1/presence?limit=1000", "GET", rlist);
    const middle = n >> 1;
    await measure(
      "room list, cursor in the middle (1,000 rooms)",
      `/v1/presence?limit=1000&cursor=${top - middle}:listed-${middle}`,
      "GET",
      rlist,
    );
    await redis.call("ZREMRANGEBYSCORE", rooms, top - n + 1, top);

    await measure("delete room (admin)", base, "DELETE");
  }
  probe.print();
  return {
    timings: probe.timings(),
    notes: [
      "Presence scripts (`--only=scaling-presence-scripts`): N = ids online in the room, loaded through the library heartbeat; for the room list N = rooms in the registry. Member and room pages are at the largest legal limit (1,000).",
    ],
  };
}
