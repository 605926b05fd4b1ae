import { describe, expect, it } from "vitest";
import { deleteCounter, increment, ranked, sweepCountersJob } from "../../src/counters/index.ts";
import { SWEEP_BATCH, SWEEP_MAX_BATCHES } from "../../src/counters/jobs.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters");
const { target, prefix, config } = lib;
const ctx = lib.ctx(Date.UTC(2026, 10, 22, 12));

describe("sweep job", () => {
  it("frees the buckets of a deleted counter, but not those a new life of it claimed", async () => {
    await increment(ctx, "old", [
      { member: "a", period: "day" },
      { member: "a", period: "day", at: Date.UTC(2026, 10, 20) },
    ]);
    await deleteCounter(ctx, "old");
    // the counter is gone for readers at once, the keys stay until swept
    expect(
      (await ranked(ctx, "old", "top", 10, { period: "day", from: "2026-11-20", to: "2026-11-22" })).items,
    ).toEqual([]);
    // two day buckets and their month's rollup (issue 15)
    expect(await keysUnder(target, `${prefix}:counters:old`)).toHaveLength(3);
    // a new life of the counter claims today's bucket before the sweep runs
    await increment(ctx, "old", [{ member: "b", period: "day" }]);
    const result = await sweepCountersJob(ctx, config);
    expect(result).toEqual({ checked: 3, deleted: 1, more: false });
    expect((await keysUnder(target, `${prefix}:counters:old:day`)).sort()).toEqual([
      `${prefix}:counters:old:day:20261122`,
      `${prefix}:counters:old:day:by-month:202611`,
    ]);
    expect(await command(target, "ZSCORE", `${prefix}:counters:old:day:by-month:202611`, "a")).toBe(null);
    expect(await command(target, "ZSCORE", `${prefix}:counters:old:day:20261122`, "b")).toBe("1");
    expect(await command(target, "EXISTS", `${prefix}:counters:_purge`)).toBe(0);
    expect(await sweepCountersJob(ctx, config)).toEqual({ checked: 0, deleted: 0, more: false });
  });

  it("says more while the purge hash lists buckets past one run's batches (review 19: a run goes on past one)", async () => {
    const purge = `${prefix}:counters:_purge`;
    const perRun = SWEEP_BATCH * SWEEP_MAX_BATCHES;
    const fields = Array.from({ length: perRun + 1 }, (_, i) => [`${prefix}:counters:gone:day:2026${i}`, "1"]);
    await command(target, "HSET", purge, ...fields.flat());
    expect(await sweepCountersJob(ctx, config)).toEqual({ checked: perRun, deleted: 0, more: true });
    expect(await sweepCountersJob(ctx, config)).toEqual({ checked: 1, deleted: 0, more: false });
  });
});
