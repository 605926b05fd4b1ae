/**
 * A model of a counter union's top N, for tests of reads that answer it without the union
 * (the threshold algorithm in src/counters/threshold.ts).
 */

/** Redis' order of equal scores: member bytes (UTF-8), not a locale's collation. */
export function bytesBefore(x: string, y: string): number {
  return Buffer.compare(Buffer.from(x), Buffer.from(y));
}

/**
 * The union's top n as `member=sum` strings: sums descending, equal sums by member bytes
 * descending (as ZRANGE … REV orders them).
 */
export function topOfSums(items: readonly { member: string; by: number }[], n: number): string[] {
  const sums = new Map<string, number>();
  for (const i of items) sums.set(i.member, (sums.get(i.member) ?? 0) + i.by);
  return [...sums]
    .sort((x, y) => y[1] - x[1] || bytesBefore(y[0], x[0]))
    .slice(0, n)
    .map(([m, s]) => `${m}=${s}`);
}
