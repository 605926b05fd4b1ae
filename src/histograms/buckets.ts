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
 * Lua computes it with `string.format('%.15g', ...)`, which Redis's C library
 * rounds half to even, where `toPrecision` rounds a tie away from zero: a double
 * whose exact decimal is 16 significant digits ending in 5 (100000.0009765625,
 * an odd bound of a width of 1/1024) is such a tie. The Lua rule placed every
 * stored value, so a tie is rounded here as Lua does (review 16: the read reported
 * such a bucket's lower bound above the values in it).
 */
export function bucketBound(index: number, width: number): number {
  return roundLikeLua(index * width);
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

/**
 * `x` rounded to 15 significant digits as C's `printf('%.15g')` does: ties to the even digit.
 * A tie is a double whose exact decimal has 16 significant digits, the last a 5: an integer from
 * 1e15 ending in 5, or a fraction whose binary expansion ends within 22 places (x·2^n an odd
 * integer y, the exact decimal y·5^n × 10^-n, 16 digits below 5^23). Anything else (most bounds:
 * a fraction like 0.3 has 50-odd binary places) is not one, told by one multiplication.
 */
function roundLikeLua(x: number): number {
  const away = Number(x.toPrecision(15));
  const a = Math.abs(x);
  let head: number;
  let exponent: number;
  if (Number.isInteger(a)) {
    // 16 digits, the last a 5 (above 2^53 a double is even; bounds stay below 2^51)
    if (a < 1e15 || a > Number.MAX_SAFE_INTEGER || a % 10 !== 5) return away;
    head = (a - 5) / 10;
    exponent = 0;
  } else {
    if (!Number.isInteger(a * 2 ** 22)) return away;
    let n = 1;
    while (!Number.isInteger(a * 2 ** n)) n++;
    const odd = a * 2 ** n;
    const product = odd * 5 ** n;
    if (product < 1e15 || product >= 1e16) return away;
    // the first 15 digits (exact: past 2^53 the product is rounded, so it is redone in BigInt)
    head = product <= Number.MAX_SAFE_INTEGER ? (product - 5) / 10 : Number((BigInt(odd) * 5n ** BigInt(n) - 5n) / 10n);
    exponent = -n;
  }
  // of the first 15 digits and the next number, the even one
  const even = head % 2 === 0 ? head : head + 1;
  return Math.sign(x) * Number(`${even}e${exponent + 1}`);
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
