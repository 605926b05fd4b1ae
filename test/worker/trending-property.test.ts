import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const MINUTE = 60_000;
const MEMBERS = ["a", "b", "c", "d", "e", "f", "g", "h"];

type Action =
  | { kind: "write"; advance: number; member: string; count: number; lateHours: number }
  | { kind: "compact"; advance: number }
  | { kind: "read"; advance: number; n: number; window: number; probe: string };

const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("write" as const),
      advance: fc.integer({ min: 0, max: 30 }),
      member: fc.constantFrom(...MEMBERS),
      count: fc.integer({ min: 1, max: 20 }),
      lateHours: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 6 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("compact" as const), advance: fc.integer({ min: 0, max: 720 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("read" as const),
      advance: fc.integer({ min: 0, max: 60 }),
      n: fc.integer({ min: 1, max: 5 }),
      window: fc.integer({ min: 1, max: 50 }),
      probe: fc.constantFrom(...MEMBERS),
    }),
  },
);

/** The true counts over hours [H - window, H], by brute force over every event. */
function truth(
  events: { hour: number; member: string; count: number }[],
  H: number,
  window: number,
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of events)
    if (e.hour >= H - window && e.hour <= H) counts.set(e.member, (counts.get(e.member) ?? 0) + e.count);
  return counts;
}

function ranked(counts: Map<string, number>) {
  return [...counts]
    .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
    .map(([member, count], i) => ({ rank: i + 1, member, count }));
}

describe("trending accuracy against a brute-force count", () => {
  it("never over-counts, bounds every error by maxError, and is exact exactly when it says so", async () => {
    // the property must meet both kinds of answer, or it proves nothing about trimming
    const seen = { exact: 0, inexact: 0, proven: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { minLength: 10, maxLength: 60 }),
        fc.integer({ min: 0, max: 23 }),
        async (actions, startHour) => {
          const api = createTestApi({
            label: "trend-prop",
            start: Date.UTC(2026, 10, 20, startHour, 7),
            vars: { TRENDING_KEEP: "3" },
          });
          const events: { hour: number; member: string; count: number }[] = [];
          let compacted = false;
          try {
            for (const step of actions) {
              api.advance(step.advance * MINUTE);
              if (step.kind === "write") {
                const at = api.now - step.lateHours * HOUR;
                const res = await api.post("/v1/trending/p/events", { member: step.member, count: step.count, at });
                expect(res.status).toBe(200);
                events.push({ hour: Math.floor(at / HOUR), member: step.member, count: step.count });
              } else if (step.kind === "compact") {
                expect((await api.post("/internal/jobs/compact", undefined, { key: "admin" })).status).toBe(200);
                compacted = true;
              } else {
                const H = Math.floor(api.now / HOUR);
                const counts = truth(events, H, step.window);
                const expected = ranked(counts);
                const res = await api.get(`/v1/trending/p/top?n=${step.n}&window=${step.window}h`);
                expect(res.status).toBe(200);
                const { items, maxError, exact, topProven } = res.body as {
                  items: { rank: number; member: string; count: number }[];
                  maxError: number;
                  exact: boolean;
                  topProven: boolean;
                };
                expect(maxError).toBeGreaterThanOrEqual(0);
                expect(exact).toBe(maxError === 0);
                seen[exact ? "exact" : "inexact"]++;
                if (!exact && topProven) seen.proven++;
                if (!compacted) expect(exact).toBe(true);
                for (let i = 0; i < items.length; i++) {
                  const item = items[i]!;
                  const real = counts.get(item.member) ?? 0;
                  expect(item.count).toBeLessThanOrEqual(real);
                  expect(real).toBeLessThanOrEqual(item.count + maxError);
                  if (i > 0) expect(item.count).toBeLessThanOrEqual(items[i - 1]!.count);
                }
                const floor = items.length === step.n ? items[items.length - 1]!.count : 0;
                for (const [member, real] of counts) {
                  if (!items.some((i) => i.member === member)) expect(real).toBeLessThanOrEqual(floor + maxError);
                }
                if (exact) expect(items).toEqual(expected.slice(0, step.n));
                if (topProven)
                  expect(items.map((i) => i.member)).toEqual(expected.slice(0, step.n).map((i) => i.member));

                const one = await api.get(`/v1/trending/p/members/${step.probe}?window=${step.window}h`);
                const real = counts.get(step.probe) ?? 0;
                expect(one.body.count).toBeLessThanOrEqual(real);
                expect(real).toBeLessThanOrEqual(one.body.count + one.body.maxError);
                if (one.body.exact)
                  expect(one.body.rank).toBe(expected.find((e) => e.member === step.probe)?.rank ?? null);
              }
            }
          } finally {
            await api.cleanup();
          }
        },
      ),
      {
        numRuns: 20,
        // one known run that trims (keep 3 of 6 members) so both kinds of answer are always met
        examples: [
          [
            [
              ...(
                [
                  ["a", 20],
                  ["b", 15],
                  ["c", 10],
                  ["d", 1],
                  ["e", 1],
                  ["f", 1],
                ] as const
              ).map(([member, count]): Action => ({ kind: "write", advance: 1, member, count, lateHours: 0 })),
              { kind: "read", advance: 0, n: 2, window: 24, probe: "d" },
              { kind: "compact", advance: 60 },
              { kind: "read", advance: 0, n: 2, window: 24, probe: "d" },
              { kind: "read", advance: 0, n: 5, window: 3, probe: "a" },
            ],
            3,
          ],
        ],
      },
    );
    expect(seen.exact).toBeGreaterThan(0);
    expect(seen.inexact).toBeGreaterThan(0);
    expect(seen.proven).toBeGreaterThan(0);
  });
});
