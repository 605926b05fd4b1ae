/**
 * Adversarial review 2: the library (`new Edgestats`) over the same scripts as the routes. The
 * routes validate query values (`n`, `min`/`max`, `top`) before the scripts run; the library's
 * handles hand them to the scripts as given, so the same question can get a different answer.
 */
import { describe, expect, it } from "vitest";
import { Edgestats } from "../../src/index.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("review2-lib");
const now = Date.UTC(2026, 10, 22, 12, 30);
const stats = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => now });

async function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await p };
  } catch (error) {
    return { ok: false, error };
  }
}

describe("library counters: n outside 1.. (HTTP answers 400)", () => {
  // FIXED (was low-medium; counters.ranked and scoreRange check n and limit): `top({ n: 0 })` sends ZRANGE key 0 -1, which
  // is every member, and `n: -1` ZRANGE 0 -2, every member but the last; HTTP refuses both (400).
  // Right: a ValidationError (as HTTP), or no items for n = 0; never more than n items.
  it("top/bottom with n = 0 or -1 never return more than n items", async () => {
    const c = stats.counter("libn");
    await c.incr([
      { member: "a", by: 3 },
      { member: "b", by: 2 },
      { member: "c", by: 1 },
    ]);
    for (const n of [0, -1]) {
      for (const side of ["top", "bottom"] as const) {
        const r = await settle(c[side]({ n }));
        if (r.ok) expect(r.value.items.length, `${side} n=${n}`).toBeLessThanOrEqual(Math.max(0, n));
      }
    }
  });

  it("top with n = 2 and a period range answers as HTTP does", async () => {
    const c = stats.counter("libp");
    await c.incr([
      { member: "a", by: 3, period: "day" },
      { member: "b", by: 2, period: "day", at: Date.UTC(2026, 10, 21, 5) },
      { member: "b", by: 2, period: "day" },
      { member: "c", by: 1, period: "day" },
    ]);
    const top = await c.top({ n: 2, period: "day", from: "2026-11-21" });
    expect(top.items).toEqual([
      { rank: 1, member: "b", score: 4 },
      { rank: 2, member: "a", score: 3 },
    ]);
  });
});

describe("library histograms: top outside 0..100", () => {
  it("read({ top: -1 }) is refused or gives no top, as HTTP refuses it", async () => {
    const h = stats.histogram("libh");
    await h.configure({ bucketWidth: 1 });
    await h.observe([1, 2, 2, 3]);
    const r = await settle(h.read({ top: -1 }));
    if (r.ok) expect(r.value.top.length).toBe(0);
  });
});

describe("library counters: range limit outside 1.. (HTTP answers 400)", () => {
  // FIXED (was low-medium, same cause): `range({ limit: -1 })` returns every member in range (Redis reads a
  // negative LIMIT count as "all"); HTTP refuses it. Right: a ValidationError or at most 0 items.
  it("range({ limit: 0 | -1 }) never returns more than the limit", async () => {
    const c = stats.counter("libr");
    await c.incr([
      { member: "a", by: 3 },
      { member: "b", by: 2 },
    ]);
    for (const limit of [0, -1]) {
      const r = await settle(c.range({ min: "-inf", max: "+inf", limit }));
      if (r.ok) expect(r.value.items.length, `limit=${limit}`).toBeLessThanOrEqual(Math.max(0, limit));
    }
  });

  it("histogram read({ top: 1000 }) is refused or capped at 100, as HTTP's 0..100", async () => {
    const h = stats.histogram("libh2");
    await h.configure({ bucketWidth: 1 });
    await h.observe(Array.from({ length: 150 }, (_, i) => i));
    const r = await settle(h.read({ top: 1000 }));
    if (r.ok) expect(r.value.top.length).toBeLessThanOrEqual(100);
  });
});
