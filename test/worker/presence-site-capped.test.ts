/**
 * The site-wide `online` of `GET /v1/presence/_total` when the minute trigger's trim is capped by
 * its subrequest share (SUBREQUEST_LIMIT=30: the trim may list 400 rooms, the webhooks job's share
 * kept back): 450 active rooms, the cron fired in workerd's scheduled path, the figure read over
 * HTTP. Once every room was visited (the second minute), each capped run's sample is the true
 * figure, as the uncapped run of `POST /internal/jobs/trim` (its own 28 subrequests: 1,150 rooms)
 * records it; before, a capped run's sample counted the rooms it visited only.
 */
import { afterAll, describe, expect, it } from "vitest";
import { runScheduledCounted } from "../../functions/scheduled.ts";
import { heartbeat } from "../../src/presence/presence.ts";
import { createRedis } from "../../src/redis/client.ts";
import { createTestApi } from "../helpers/worker.ts";

const MIN = 60_000;
const start = Date.UTC(2026, 10, 22, 12, 30, 10);
const api = createTestApi({ label: "site-capped", start, vars: { SUBREQUEST_LIMIT: "30" } });
afterAll(() => api.cleanup());

describe("GET /v1/presence/_total with the minute trigger's trim capped by SUBREQUEST_LIMIT=30", () => {
  it("450 active rooms: from the second minute each capped sample is the uncapped run's figure; the peak is that figure", async () => {
    const rooms = Array.from({ length: 450 }, (_, i) => `r${String(i).padStart(3, "0")}`);
    const sizes = rooms.map((_, i) => 1 + (i % 3));
    const T = sizes.reduce((a, b) => a + b, 0);
    const ctx = {
      redis: createRedis({ url: api.env.UPSTASH_REDIS_REST_URL, token: api.env.UPSTASH_REDIS_REST_TOKEN }),
      prefix: api.prefix,
      now: start,
    };
    for (let i = 0; i < rooms.length; i += 50)
      await Promise.all(
        rooms.slice(i, i + 50).map((room, j) =>
          heartbeat(
            ctx,
            room,
            Array.from({ length: sizes[i + j]! }, (_, k) => `${room}-${k}`),
          ),
        ),
      );

    const samples: { rooms: unknown; capped: unknown; online: number }[] = [];
    for (let m = 1; m <= 3; m++) {
      const at = start + m * MIN;
      const run = await runScheduledCounted("* * * * *", at, api.env);
      expect(run.subrequests).toBeLessThanOrEqual(30);
      const trim = run.results.trim as Record<string, unknown>;
      api.setNow(at + 1000);
      const site = await api.get("/v1/presence/_total");
      expect(site.status).toBe(200);
      expect(site.body.onlineAt).toBe(at);
      samples.push({ rooms: trim.rooms, capped: trim.capped, online: site.body.online as number });
    }
    const firstVisited = sizes.slice(0, 400).reduce((a, b) => a + b, 0);
    expect(samples).toEqual([
      { rooms: 400, capped: true, online: firstVisited },
      { rooms: 400, capped: true, online: T },
      { rooms: 400, capped: true, online: T },
    ]);
    // the uncapped run (the request's own budget lists up to 1,150 rooms) records the same figure
    api.setNow(start + 4 * MIN);
    const uncapped = await api.post("/internal/jobs/trim", undefined, { key: "admin" });
    expect(uncapped.body.result).toMatchObject({ rooms: 450, capped: false, online: T, siteOnline: T });
    const site = await api.get("/v1/presence/_total");
    expect(site.body).toMatchObject({ online: T, onlineAt: start + 4 * MIN, peakToday: T });
  }, 120_000);
});
