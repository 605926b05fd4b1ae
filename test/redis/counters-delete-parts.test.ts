/**
 * A member delete that may change more keys than one script may reach (MAX_DELETE_SCRIPT_KEYS)
 * runs as several scripts in the one call (src/counters/counters.ts, `deleteMember`): each part a
 * plan of at most that many keys, the parts together leaving what one delete would, and an
 * Idempotency-Key replaying the whole call.
 */
import { describe, expect, it } from "vitest";
import { deleteMember, increment, MAX_DELETE_SCRIPT_KEYS, type IncrItem } from "../../src/counters/index.ts";
import { deletePartRecord, deleteSlices } from "../../src/counters/counters.ts";
import { deleteCall } from "../../src/counters/delete-layout.ts";
import { keyOf } from "../../src/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR } from "../../src/time.ts";
import { counterState, rollupMismatches } from "../helpers/counter-state.ts";
import { libraryTest } from "../helpers/library.ts";
import { resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters-delparts", { timeoutMs: 30_000 });
const { target, prefix } = lib;
const NOW = Date.UTC(2026, 10, 22, 12, 30);
const ctx = lib.ctx(NOW);
const { stateOf } = counterState(lib);
const TAG = `delparts-${Math.random().toString(36).slice(2, 8)}`;
const counted = { ...ctx, redis: createRedis({ url: target.url, token: `${target.token}.${TAG}`, timeoutMs: 30_000 }) };

// 60 days of hours, 2026-09-21 17:00 .. 2026-11-20 16:00 (docs/costs.md's range)
const FROM = Date.UTC(2026, 8, 21, 17);
const TO = FROM + 1439 * HOUR;
const range = { period: "hour" as const, from: FROM, to: TO };

async function dense(name: string, member: string) {
  const items: IncrItem[] = Array.from({ length: 1440 }, (_, i) => ({ member, period: "hour", at: FROM + i * HOUR }));
  // another member in every 5th hour, so rollups keep members and some hours are emptied
  for (let i = 0; i < 1440; i += 5) items.push({ member: "other", period: "hour", at: FROM + i * HOUR });
  for (let i = 0; i < items.length; i += 1000) await increment(ctx, name, items.slice(i, i + 1000));
}

describe("member deletes past one script's keys run in parts", () => {
  it("the parts of any range up to 400 days are whole UTC days (but its ends), each a plan within one script's keys", () => {
    for (const [from, days] of [
      [FROM, 60],
      [Date.UTC(2025, 9, 19, 5), 400],
      [Date.UTC(2026, 0, 31), 61],
      [Date.UTC(2026, 1, 27, 23), 3],
    ] as const) {
      const end = from + days * DAY;
      const slices = deleteSlices(prefix, "x", "hour", from, end);
      expect(slices[0]![0]).toBe(from);
      expect(slices.at(-1)![1]).toBe(end);
      for (const [i, [a, b]] of slices.entries()) {
        if (i > 0) expect(a % DAY).toBe(0);
        expect(a).toBe(i === 0 ? from : slices[i - 1]![1]);
        expect(deleteCall(prefix, "x", "hour", a, b).parts.length).toBeLessThanOrEqual(MAX_DELETE_SCRIPT_KEYS);
      }
    }
    // 400 days of days: one part
    expect(deleteSlices(prefix, "x", "day", Date.UTC(2025, 9, 19), Date.UTC(2026, 10, 22))).toHaveLength(1);
  });

  it("a member in every hour of 60 days: the range's script, then 4 parts of 16 days; exactly what one delete leaves", async () => {
    await dense("every-hour", "d");
    await deleteMember(counted, "every-hour", "nobody", range); // loads the script (NOSCRIPT once)
    await resetStats(target, TAG);
    expect(await deleteMember(counted, "every-hour", "d", range)).toEqual({ removed: 1440, replayed: false });
    expect((await statsOf(target, TAG)).requests).toBe(5);
    const st = await stateOf("every-hour");
    expect([...st.hours.values()].filter((m) => m.has("d"))).toEqual([]);
    expect([...st.rollups.values()].filter((m) => m.has("d"))).toEqual([]);
    // "other" kept in its 288 hours, and every rollup the sum of its hours
    expect(st.hours.size).toBe(288);
    expect(rollupMismatches(st, true)).toEqual([]);
  });

  it("with an Idempotency-Key: a replay answers the call's total and deletes nothing written since", async () => {
    await dense("idem", "d");
    const idem = { key: keyOf(prefix, "idem", "del-1"), fingerprint: "fp-del-1" };
    expect(await deleteMember(ctx, "idem", "d", range, idem)).toEqual({ removed: 1440, replayed: false });
    // written after the delete, in its range
    await increment(ctx, "idem", [{ member: "d", by: 7, period: "hour", at: FROM + 100 * HOUR }]);
    expect(await deleteMember(ctx, "idem", "d", range, idem)).toEqual({ removed: 1440, replayed: true });
    const st = await stateOf("idem");
    expect(st.hours.get(FROM + 100 * HOUR)?.get("d")).toBe(7);
    expect(rollupMismatches(st, true)).toEqual([]);
  });

  it("a retry after a failure part way replays the parts done and runs the rest", async () => {
    await dense("retry", "d");
    const idem = { key: keyOf(prefix, "idem", "del-2"), fingerprint: "fp-del-2" };
    // the first part done under its own record, as a call that failed after it would leave it
    const [a, b] = deleteSlices(prefix, "retry", "hour", FROM, TO + HOUR)[0]!;
    const first = await deleteMember(
      ctx,
      "retry",
      "d",
      { period: "hour", from: a, to: b - HOUR },
      { ...idem, key: deletePartRecord(idem.key, a, b) },
    );
    expect(first.removed).toBe((b - a) / HOUR);
    expect(await deleteMember(ctx, "retry", "d", range, idem)).toEqual({ removed: 1440, replayed: false });
    const st = await stateOf("retry");
    expect([...st.hours.values()].filter((m) => m.has("d"))).toEqual([]);
    expect(rollupMismatches(st, true)).toEqual([]);
  });
});
