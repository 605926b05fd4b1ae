/** Times for the calendar-rollup property tests (counters-calendar, counters-delete). */
import fc from "fast-check";
import { DAY, HOUR } from "../../src/time.ts";

/**
 * Arbitraries over the 399 days before `now`: `time`, often within 30 hours of a month's start
 * (where rollups meet), and `range`, two such times in order.
 */
export function calendarTimes(now: number) {
  const oldest = now - 399 * DAY;
  const first = new Date(oldest);
  const edges: number[] = [];
  // every month start from the one before the oldest time to the first after now (clamped below)
  for (
    let m = Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), 1);
    edges.at(-1) === undefined || edges.at(-1)! <= now;
  ) {
    edges.push(m);
    const d = new Date(m);
    m = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
  const time = fc.oneof(
    fc.integer({ min: oldest, max: now }),
    fc
      .tuple(fc.constantFrom(...edges), fc.integer({ min: -30 * HOUR, max: 30 * HOUR }))
      .map(([edge, d]) => Math.min(now, Math.max(oldest, edge + d))),
  );
  const range = fc.tuple(time, time).map(([x, y]) => (x <= y ? [x, y] : [y, x]) as [number, number]);
  return { oldest, time, range };
}
