/**
 * Review 13 #1, fixed: trending.rising's turns follow a cursor in Redis (src/webhooks/rising.ts),
 * here with named streams only (no registry list to send the cursor's INCRBY with: one round trip
 * more, only when the streams are more than a turn), counted by the local Upstash server.
 */
import { afterAll, describe, expect, it } from "vitest";
import { registryKeys } from "../../src/webhooks/keys.ts";
import { detectRising } from "../../src/webhooks/rising.ts";
import { stored } from "../../src/webhooks/webhooks.ts";
import { ctxOf } from "../helpers/job-budget.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const MIN = 60_000;
const START = Date.UTC(2026, 10, 22, 12, 10, 10);

describe("trending.rising over named streams, a share varying run to run", () => {
  const api = createTestApi({ label: "rv13-cursor", start: START, vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } });
  afterAll(() => api.cleanup());

  it("7 streams named by 7 webhooks, 1 then 2 streams a run: each read within 2 × 7 runs; no run past its share", async () => {
    const streams = Array.from({ length: 7 }, (_, i) => `n${i}`);
    for (const s of streams) {
      expect((await api.post(`/v1/trending/${s}/events`, { events: [{ member: `m-${s}`, count: 50 }] })).status).toBe(
        200,
      );
      const res = await api.put(
        `/v1/webhooks/w-${s}`,
        {
          url: `${api.env.UPSTASH_REDIS_REST_URL}/hook`,
          secret: "rv13-cursor-secret-0123",
          events: ["trending.rising"],
          filter: { stream: s },
        },
        { key: "admin" },
      );
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    }
    const hooks = await stored(ctxOf(api));
    const first = Math.floor(START / MIN) + 1;
    for (let m = first; m < first + 14; m++) {
      // the cursor's INCRBY (1) and two a stream: 4 pays one stream, 6 pays two
      const subrequests = m % 2 === 0 ? 4 : 6;
      await api.resetStats();
      const found = await detectRising(ctxOf(api, m * MIN + 10_000), hooks, 50, subrequests);
      expect(found.streams).toBe(m % 2 === 0 ? 1 : 2);
      expect(found.more).toBe(true);
      // (the first runs load the rising read's and the emit's scripts: a NOSCRIPT answer and its
      // EVAL, which a job's budget keeps apart, one a script)
      const loads = m < first + 2 ? 2 : 0;
      expect((await api.stats()).requests).toBeLessThanOrEqual(subrequests + loads);
    }
    const bodies = await command<string[]>(api.target, "HVALS", registryKeys(api.prefix).deliveries);
    expect(streams.filter((s) => bodies.some((b) => b.includes(`m-${s}`)))).toEqual(streams);
  });

  it("as many streams as a turn: no cursor, the same round trips as before (one rising read and one emit a stream)", async () => {
    const hooks = (await stored(ctxOf(api))).slice(0, 2);
    await api.resetStats();
    const found = await detectRising(ctxOf(api, START + 30 * MIN), hooks, 50, 5);
    expect(found).toMatchObject({ streams: 2, of: 2, more: false });
    // both members already told this hour: the emit answers `repeated`, still one script a stream
    expect((await api.stats()).requests).toBe(4);
  });
});
