/**
 * The Edgestats entry point's own methods (beyond the per-feature handles): the site-wide
 * presence total and every job the service runs, each by the name the cron triggers use.
 */
import { describe, expect, it } from "vitest";
import { Edgestats } from "../../src/index.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("libentry");
let now = Date.UTC(2026, 10, 25, 12, 0, 30);
const stats = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => now });

describe("Edgestats", () => {
  it("presenceTotal sums the rooms the trim job visited, and counts today's distinct ids", async () => {
    await stats.presence("a").heartbeat(["u1", "u2"]);
    await stats.presence("b").heartbeat(["u2", "u3"]);
    now += 60_000;
    const trim = await stats.jobs.trim();
    expect(trim).toEqual(expect.objectContaining({ rooms: expect.any(Number) }));
    const total = await stats.presenceTotal();
    // online is summed per room (u2 counts twice); active is distinct ids (an HLL, exact at this size)
    expect(total).toEqual(
      expect.objectContaining({ online: 4, peakToday: 4, activeToday: 3, activeTodayError: 0.0081 }),
    );
  });

  it("runs every job of the service, with the cron's summary", async () => {
    await stats.trending("s").record("x");
    await stats.leaderboard("b").join("ada", { name: "Ada", score: 3 });
    now += 3_600_000;
    expect(await stats.jobs.compact()).toEqual(expect.objectContaining({ streams: 1, more: false }));
    expect(await stats.jobs.trim()).toEqual(expect.objectContaining({ online: 0, capped: false }));
    expect(await stats.jobs.sweepCounters()).toEqual({ checked: 0, deleted: 0, more: false });
    expect(await stats.jobs.leaderboardSnapshot()).toEqual(
      expect.objectContaining({ day: "2026-11-25", boards: 1, more: false }),
    );
  });
});
