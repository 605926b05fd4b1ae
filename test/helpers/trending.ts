/** Brute-force trending answers for tests: what the service must match. */
import { expect } from "vitest";
export const HOUR = 3_600_000;

export type TrendingEvent = { member: string; count: number; at: number };

/** The true top n over hours [H - window, H], ties by member (byte order = code units here: ASCII names). */
export function bruteTop(log: TrendingEvent[], now: number, window: number, n: number) {
  const H = Math.floor(now / HOUR);
  const counts = new Map<string, number>();
  for (const e of log) {
    const h = Math.floor(e.at / HOUR);
    if (h >= H - window && h <= H) counts.set(e.member, (counts.get(e.member) ?? 0) + e.count);
  }
  return [...counts]
    .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
    .slice(0, n)
    .map(([member, count], i) => ({ rank: i + 1, member, count }));
}

/** Long-tailed counts over three finished hours and the current one (the cost tests' searches and pages). */
export function longTail(now: number, perHour: number): TrendingEvent[] {
  return [3, 2, 1, 0].flatMap((back) =>
    Array.from({ length: perHour }, (_, i) => ({
      member: `p${i}`,
      count: 1 + Math.floor(1000 / (1 + ((i * 7919 + back * 13) % perHour))),
      at: now - back * HOUR,
    })),
  );
}

/** Awaits a Worker answer and asserts it succeeded: a set-up step whose failure would skew a cost. */
export async function ok<T extends { status: number }>(res: Promise<T>): Promise<T> {
  const r = await res;
  expect(r.status).toBeLessThan(300);
  return r;
}
