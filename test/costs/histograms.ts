import type { CostArea, CostRow } from "./types.ts";

const r = (call: string, state: string, commands: number, extra: Partial<CostRow> = {}): CostRow => ({ call, state, roundTrips: 1, commands, ...extra });

/** Histogram calls, measured by test/worker/costs-histograms.test.ts. */
export const area = {
  title: "Histograms",
  order: 30,
  rows: {
    putNew: r("histogram PUT settings", "new histogram", 4),
    putSame: r("histogram PUT settings", "existing, same width and retention", 4),
    putRetention: r("histogram PUT settings", "existing, new retention, 1 stored day", 410, {
      note: "A new retention re-times every stored day: a script may touch only the keys it declares and SCAN is off limits, so it checks each of the 404 days that may hold data (`EXISTS`) and re-expires those that do. An admin call, rare; the same holds for a width change while data may exist.",
    }),
    observeFirstOfDay: r("histogram observe, 1 value", "first observation of the UTC day", 9, {
      naive: 2,
      note: "First touch of a day: `ZCARD` (bucket cap, and whether the day is new), an `EXPIRE` for each of the day's two keys and a registry `ZADD`. Their deadline is fixed by the date and the retention, so later writes never repeat them.",
    }),
    observeSteady: r("histogram observe, 1 value", "steady, existing bucket", 5, {
      naive: 2,
      target: 5,
      note: "`HMGET` of the settings (the width places the value; the histogram must exist), `ZINCRBY` of the bucket, `ZINCRBY` of the day's `sum`, one `ZADD GT` keeping both extremes. The naive code keeps no sum, min or max: it cannot answer the mean.",
    }),
    observeNewBucket: r("histogram observe, 1 value", "steady, first value in its bucket today", 6, {
      naive: 2,
      note: "A `ZINCRBY` answering exactly its own increment made a new bucket: only then does `ZCARD` check the 5,000-bucket daily cap.",
    }),
    observeIdempotent: r("histogram observe, 1 value, `Idempotency-Key`", "steady, first request", 7, { target: 7 }),
    observeReplay: r("histogram observe, 1 value, `Idempotency-Key`", "replay", 2),
    observeBatchSteady: r("histogram observe, 1,000 values", "steady, 100 existing buckets of one day", 104, { naive: 2000 }),
    observeBatchFirst: r("histogram observe, 1,000 values", "first of the day, 100 new buckets", 108, { naive: 2000 }),
    observeRefused: r("histogram observe, 1 value", "histogram never created (404)", 2),
    read1: r("histogram read", "1 day", 4, { naive: 2 }),
    read30: r("histogram read", "30 days", 4, { naive: 31 }),
    read400: r("histogram read", "400 days", 4, {
      naive: 401,
      note: "Any range is one `ZUNION` of the days' buckets (their `sum` members add up too) and one `ZUNION … AGGREGATE MAX` of their extremes; days no retention can still keep are not read at all.",
    }),
    readOld: r("histogram read", "400 days older than any retention", 2),
    list: r("histogram list", "steady", 4, {
      note: "Drops, in the same script, up to 1,000 names whose data has all expired (`ZRANGE … BYSCORE`; one `ZREM` more when there are some), then one page by recent activity and the total.",
    }),
    delete: r("histogram DELETE", "any", 3),
  },
} satisfies CostArea;
