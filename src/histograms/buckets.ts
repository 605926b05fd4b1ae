/**
 * Pure bucket and percentile math of histograms (no Redis). The Lua scripts
 * use the same bucket rule (`bucketBound`/`bucketOf` in scripts.ts); these functions
 * are its reference, used by the read path and by the tests.
 */

/** Largest |bucket index| a value may fall in: keeps indexes exact integers and bounds distinct. */
export const MAX_BUCKET_INDEX = 1e12;

/**
 * Lower bound of bucket `index`: `index * width` rounded to 15 significant
 * digits, so a width of 0.1 gives bounds 0.3 rather than 0.30000000000000004.
 * Lua computes the same with `string.format('%.15g', ...)`.
 */
export function bucketBound(index: number, width: number): number {
  return Number((index * width).toPrecision(15));
}

/**
 * Index of the bucket `[bound(i), bound(i + 1))` holding `value`. Division
 * alone can land one off (0.3 / 0.1 = 2.9999999999999996), so the result is
 * nudged until it agrees with the bounds reported to clients.
 */
export function bucketIndex(value: number, width: number): number {
  let index = Math.floor(value / width);
  while (bucketBound(index, width) > value) index--;
  while (bucketBound(index + 1, width) <= value) index++;
  // -0 (from a value of -0 or a tiny negative quotient) is bucket 0, as Lua and JSON say
  return index === 0 ? 0 : index;
}

export interface Bucket {
  lower: number;
  upper: number;
  count: number;
}

/**
 * Estimates the `q`-quantile (0 < q ≤ 1) from buckets sorted by value:
 * the bucket where the cumulative count reaches `q * total`, interpolated
 * linearly inside it as if its observations were spread evenly, then clamped
 * to the exact observed min/max (which lie inside the first/last bucket).
 * The true nearest-rank quantile lies in the same bucket, so the estimate is
 * off by less than one bucket width.
 */
export function quantile(
  buckets: readonly Bucket[],
  q: number,
  observed?: { min: number; max: number },
): number | null {
  const total = buckets.reduce((sum, b) => sum + b.count, 0);
  if (total <= 0) return null;
  const target = q * total;
  let below = 0;
  let estimate: number | null = null;
  for (const bucket of buckets) {
    if (bucket.count <= 0) continue;
    if (below + bucket.count >= target) {
      // At most the middle of the last observation's share: a bucket is [lower, upper), so a target
      // met exactly at its end must not land on `upper`, a whole width from a true value at `lower`.
      const fraction = Math.min(Math.max(0, (target - below) / bucket.count), (bucket.count - 0.5) / bucket.count);
      estimate = bucket.lower + fraction * (bucket.upper - bucket.lower);
      break;
    }
    below += bucket.count;
  }
  // Rounding in the running sum can leave the target just past the last bucket.
  if (estimate === null) estimate = buckets.at(-1)?.upper ?? null;
  if (estimate === null) return null;
  if (observed) estimate = Math.min(Math.max(estimate, observed.min), observed.max);
  return estimate;
}

/** The nearest-rank quantile of raw values: the reference the estimates are tested against. */
export function exactQuantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? null;
}

/** The `n` fullest buckets, fuller first; ties go to the lower bucket. */
export function topBuckets(buckets: readonly Bucket[], n: number): Bucket[] {
  return [...buckets].sort((a, b) => b.count - a.count || a.lower - b.lower).slice(0, n);
}
