/**
 * The site-wide `online` of `GET /v1/presence/_total` when the minute trigger's trim is capped by
 * its subrequest share (SUBREQUEST_LIMIT=30: the trim may list 400 rooms in a fresh isolate, more
 * once the isolate knows its scripts loaded — src/redis/loaded.ts — the webhooks job's share kept
 * back): 900 active rooms, the cron fired in workerd's scheduled path, the figure read over HTTP.
 * Since review 19 the capped trim's second turn (what the idle webhooks job left) visits the rest,
 * so each minute's sample is the true figure, as the uncapped run of `POST /internal/jobs/trim`
 * (its own 28 subrequests: 1,150 rooms) records it; before, a capped run's sample counted the rooms
 * it visited only.
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
  it("900 active rooms: once every room was visited, each capped sample is the uncapped run's figure; the peak is that figure", async () => {
    const rooms = Array.from({ length: 900 }, (_, i) => `r${String(i).padStart(3, "0")}`);
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
    for (let m = 1; m <= 4; m++) {
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
    // The trim's first turn is capped by its share (400 rooms in a fresh isolate, the webhooks job's
    // share kept back); the idle webhooks job leaves that share unused, and the trim's second turn
    // (review 19: a `capped` trim gets one, as a `more: true` job does) lists the rooms the first
    // did not reach, then those it visited (rotated, still due): every minute reaches all 900 rooms
    // and its sample is the true figure from the first minute on. Until review 19 the first sample
    // counted the rooms the run visited only (test/redis/presence-site-capped.test.ts keeps those
    // capped samples)
    for (const [i, sample] of samples.entries()) {
      expect(sample.rooms as number, `run ${i + 1}`).toBeGreaterThanOrEqual(900);
      expect(sample.online, `run ${i + 1}`).toBe(T);
    }
    // the uncapped run (the request's own budget lists up to 1,150 rooms) records the same figure
    const later = start + 4 * MIN;
    api.setNow(later);
    const uncapped = await api.post("/internal/jobs/trim", undefined, { key: "admin" });
    expect(uncapped.body.result).toMatchObject({ rooms: 900, capped: false, online: T, siteOnline: T });
    const site = await api.get("/v1/presence/_total");
    expect(site.body).toMatchObject({ online: T, onlineAt: later, peakToday: T });
  }, 120_000);
});
