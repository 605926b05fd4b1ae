/**
 * Adversarial review (round 2) of presence: heartbeats applied out of time order. A queued
 * heartbeat (`Prefer: respond-async`, docs/ingest.md) is applied by the consumer at its
 * request's time (src/ingest/plan.ts: the window's `at`), so it can reach Redis after a
 * synchronous heartbeat or leave that was sent later. The library is driven at those times.
 */
import { describe, expect, it } from "vitest";
import * as presence from "../../src/presence/index.ts";
import { readConfig } from "../../src/config.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const { heartbeat, leave, stats } = presence;
const lib = libraryTest("review2-presence");
const T0 = Date.UTC(2026, 11, 2, 12, 0);
const TIMEOUT = 300_000;

describe("heartbeats applied late (queued ingest)", () => {
  // FIXED (was medium; the count's upper bound is the heartbeat's own time): the heartbeat script counted `ZCOUNT seen <now-timeout> +inf` at the late heartbeat's own
  // time, which also counts ids seen AFTER that time (their last-seen is in its "future"), and
  // writes that sum as the day's PCU. RIGHT: PCU is the most ids online at one instant (docs/
  // presence.md: "PCU is exact"); here never more than 2 were. Severity: medium — peakToday/peak
  // of ?day= overstated whenever a queued heartbeat lands after later ones (async ingest with
  // churn, or across midnight where a late 23:59 heartbeat counts the new day's ids into
  // yesterday's peak).
  it("a late heartbeat does not count ids seen after its own time into the peak", async () => {
    const ctx = lib.ctx(T0, "late-peak");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["x"]); // x online [0, 300 000]
    await heartbeat(at(TIMEOUT + 2), "r", ["y"]); // x gone at 300 001; y online from 300 002
    await heartbeat(at(10), "r", ["c"]); // queued at 10, applied now: c online [10, 300 010]
    // At any instant at most 2 of x, y, c were online (x+c until 300 000, then c+y).
    const s = await stats(at(TIMEOUT + 20), "r");
    expect(s.online).toBe(1); // y only
    expect(s.peakToday).toBe(2);
  });

  it("a late heartbeat of yesterday does not count today's ids into yesterday's peak", async () => {
    const ctx = lib.ctx(T0, "late-midnight");
    const d0 = Date.UTC(2026, 11, 2);
    const at = (ms: number) => ({ ...ctx, now: ms });
    await heartbeat(at(d0 - 1000), "r", ["a"]); // 23:59:59.000 yesterday
    await heartbeat(
      at(d0 + 1000),
      "r",
      Array.from({ length: 50 }, (_, i) => `today${i}`),
    );
    await heartbeat(at(d0 - 500), "r", ["late"]); // queued at 23:59:59.500, applied after midnight
    const yesterday = await presence.day(at(d0 + 2000), "r", "2026-12-01");
    expect(yesterday.peak).toBe(2); // a and late; the 50 ids of today were never online yesterday
  });

  // FIXED (was low; 2026-11-27): a heartbeat sent before a leave but applied after it (queued) put the id
  // online again for up to a timeout (ZADD GT raised last-seen over the leave's past-the-timeout value).
  // The leave now records its time per id (`ids` field `\x02<id>`, read by the heartbeat's HMGET), and
  // such a heartbeat gets the last-seen it would have had in time order.
  it("a heartbeat sent before a leave and applied after it does not bring the id back", async () => {
    const ctx = lib.ctx(T0, "late-leave");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["a"]);
    await leave(at(2000), "r", "a");
    await heartbeat(at(1000), "r", ["a"]); // queued at 1 000, applied after the leave
    expect((await stats(at(3000), "r")).online).toBe(0);
  });

  it("a heartbeat sent after the leave brings the id back", async () => {
    const ctx = lib.ctx(T0, "late-leave-rejoin");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["a"]);
    await leave(at(2000), "r", "a");
    expect(await heartbeat(at(2001), "r", ["a"])).toMatchObject({ online: 1, new: 0 });
    // ... and a heartbeat sent before the leave, applied after the rejoin, does not take it offline
    await heartbeat(at(1000), "r", ["a"]);
    expect((await stats(at(3000), "r")).online).toBe(1);
  });

  it("a leave applied late keeps the later leave's mark", async () => {
    const ctx = lib.ctx(T0, "late-leave-twice");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["a"]);
    await leave(at(3000), "r", "a");
    await leave(at(2000), "r", "a"); // queued at 2 000, applied after the leave at 3 000
    await heartbeat(at(2500), "r", ["a"]); // sent before the leave at 3 000
    expect((await stats(at(3500), "r")).online).toBe(0);
  });

  it("a heartbeat more than a timeout before the leave keeps its in-order last-seen", async () => {
    const ctx = lib.ctx(T0, "late-leave-far");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["a"]);
    await leave(at(TIMEOUT + 5000), "r", "a");
    await heartbeat(at(3000), "r", ["a"]); // in time order its last-seen (3 000) is before the leave's
    expect((await stats(at(TIMEOUT + 2000), "r")).online).toBe(1);
    expect((await stats(at(TIMEOUT + 5000), "r")).online).toBe(0);
  });

  it("a late heartbeat of an id that left after it counts the id once in the peak", async () => {
    const ctx = lib.ctx(T0, "late-leave-peak");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["a"]);
    await heartbeat(at(1500), "r", ["b"]); // a and b: 2
    await leave(at(2000), "r", "a");
    await leave(at(2000), "r", "b");
    await heartbeat(at(1000), "r", ["a"]); // late: a was online at 1 000, counted by its last-seen alone
    const s = await stats(at(2500), "r");
    expect(s.online).toBe(0);
    expect(s.peakToday).toBe(2);
  });

  it("an id's leave mark goes when the id is forgotten past the horizon", async () => {
    const DAY = 86_400_000;
    const ctx = lib.ctx(T0, "late-leave-forget");
    const key = `${ctx.prefix}:presence:r:ids`;
    await heartbeat(ctx, "r", ["a", "b"]);
    await leave({ ...ctx, now: T0 + 1000 }, "r", "a");
    expect((await command<string[]>(lib.target, "HKEYS", key)).sort()).toEqual([
      "\u00011",
      "\u00012",
      "\u0002a",
      "a",
      "b",
    ]);
    const later = { ...ctx, now: T0 + 3 * DAY };
    await heartbeat(later, "r", ["c"]);
    await presence.createTrimJob()(later, readConfig({ PRESENCE_ID_HORIZON_DAYS: "2" }));
    expect((await command<string[]>(lib.target, "HKEYS", key)).sort()).toEqual(["\u00013", "c"]);
  });
});
