import type { CostArea, CostRow } from "./types.ts";

const r = (call: string, state: string, commands: number, extra: Partial<CostRow> = {}): CostRow => ({
  call,
  state,
  roundTrips: 1,
  commands,
  ...extra,
});

/** Histogram calls, measured by test/worker/costs-histograms.test.ts. */
export const area = {
  title: "Histograms",
  order: 30,
  rows: {
    putNew: r("histogram PUT settings", "new histogram", 6, {
      note: "`HMGET`, `HSET` of the settings, and the listing: a `ZADD GT CH` of its deadline (`hist:_names`) and, as that changed it, a `ZREVRANGE … 0 0 WITHSCORES` of the registry the list pages (`hist:_recent`) and a `ZADD GT` stamping the name there with now, or the highest stamp + 1 when that is not below now (review 24: 4 before, the deadline was the registry; review 25: 5 before, now alone, from a lagging clock or in the same millisecond, could fall below a pass's highest and be missed). A PUT of the same settings on a later UTC day than its listing's moves the deadline too: 6.",
    }),
    putSame: r("histogram PUT settings", "existing, same width and retention", 4, {
      note: "The same day: the `ZADD GT CH` of the deadline changes nothing, so no stamp.",
    }),
    putRetention: r("histogram PUT settings", "existing, new retention, 1 stored day", 427, {
      note: "A new retention re-times every stored day and month rollup: a script may touch only the keys it declares and SCAN is off limits, so it checks each of the 404 days and 15 months that may hold data (`EXISTS`) and re-expires those that do. An admin call, rare; the same holds for a width change while data may exist. The deadline moves (set exactly, either way): its `ZADD` and the registry's stamp, above its highest (425 before review 24, 426 before review 25).",
    }),
    observeFirstOfDay: r("histogram observe, 1 value", "first observation of the UTC day (the day of its PUT)", 12, {
      naive: 2,
      note: "First touch of a day: `ZCARD` (bucket cap, and whether the day is new), an `EXPIRE` for each of the day's two keys and its month rollup, and a `ZADD GT CH` of the listing deadline (`hist:_names`; the PUT of this day already set it: unchanged, so no stamp). Their deadline is fixed by the date and the retention, so later writes never repeat them. And an `HSET` of the new day's extremes into the settings (the mirror the steady row reads).",
    }),
    observeFirstOfLaterDay: r(
      "histogram observe, 1 value",
      "first observation of a UTC day later than any it holds",
      14,
      {
        naive: 2,
        note: "The first-touch row, and the deadline moved: a `ZREVRANGE … 0 0 WITHSCORES` of the registry the list pages (`hist:_recent`) and a `ZADD GT` stamping the name there with now, or its highest stamp + 1 when that is not below now, so a pass by cursor lists it at its end (review 24: 12 before, the deadline was the registry, and a name rising mid-pass to no later than the first page's highest was missed; review 25: 13 before, now alone from a lagging clock could still fall below it). Once a day per histogram written daily.",
      },
    ),
    observeSteady: r("histogram observe, 1 value", "steady, existing bucket, within the day's extremes", 5, {
      naive: 2,
      target: 5,
      note: "`HMGET` of the settings (the width places the value; the histogram must exist), `ZINCRBY` of the bucket, and (issue 15) the same bucket `ZINCRBY` on the month rollup, which is what bounds a 400-day read to ≤ ~75 keys instead of 400 days; the day's sum is one `ZINCRBY` of the member `s:<yyyymmdd>` of the month rollup, which is also the month's sum (was 7: a `sum` member in the day key and another in the month's). The day's extremes are a `ZADD GT` of its `ext` set only when they change (next row): the settings hash mirrors the newest day's extremes as last written, and the same `HMGET` reads them (was 6: a `ZADD GT` on every write). The naive code keeps no sum, min or max: it cannot answer the mean; where it can answer, 1,000 values cost 203 here against its 2,000 and a 400-day read 19 against its 401.",
    }),
    observeNewExtreme: r("histogram observe, 1 value", "steady, existing bucket, a new extreme of the day", 7, {
      naive: 2,
      note: "The `ZADD GT` of the day's `max` and negated `min`, and an `HSET` of the mirror in the settings, written last (after every check that may refuse), so it never claims more than the `ext` set holds. Rare in steady state: n values in random order set about 2·ln n records a day (~18 in 10,000). A write dated before the newest day does the `ZADD GT` without the mirror (the late-write row).",
    }),
    observeNewBucket: r("histogram observe, 1 value", "steady, first value in its bucket today", 6, {
      naive: 2,
      note: "A `ZINCRBY` answering exactly its own increment made a new bucket: only then does `ZCARD` check the 5,000-bucket daily cap.",
    }),
    observePastDay: r(
      "histogram observe, 1 value",
      "a day before the newest written (late write), existing bucket",
      6,
      {
        naive: 2,
        note: "Only the newest day's extremes are mirrored, so a late write always does its `ZADD GT` (as every write did before the mirror). So does a write to a day within a day of its deadline (which another clock may already have passed).",
      },
    ),
    observeIdempotent: r("histogram observe, 1 value, `Idempotency-Key`", "steady, first request", 6, {
      target: 7,
      note: "Steady observe (5) plus one `SET … NX EX 86400` of the idempotency record (was `GET`, then `SET`: 8). Observe is all or nothing, so its result (`accepted`: the number of values) is known before it runs, and the record is written first; only when the key is taken (a replay) does a `GET` read it. A refusal or an error inside the script `DEL`s the record again (one command more, on that path only), so it never claims a write that did not happen.",
    }),
    observeReplay: r("histogram observe, 1 value, `Idempotency-Key`", "replay", 3, {
      note: "`SET … NX` finds the key taken, then `GET` of the record (2 before: a first request now pays one command less, a retry one more).",
    }),
    observeBatchSteady: r("histogram observe, 1,000 values", "steady, 100 existing buckets of one day", 203, {
      naive: 2000,
      note: "One `ZINCRBY` per distinct bucket on the day and one on its month rollup, and one of the day's sum (in the month rollup); the batch's extremes are within the day's.",
    }),
    observeBatchFirst: r("histogram observe, 1,000 values", "first of the PUT's day, 100 new buckets", 210, {
      naive: 2000,
    }),
    observeRefused: r("histogram observe, 1 value", "histogram never created (404)", 2),
    read1: r("histogram read", "1 day", 5, {
      naive: 2,
      note: "`HMGET` of the settings, `ZRANGE` of the day (no scratch key: one day cannot reach the cap; one part is its own union), `ZUNION` of its extremes, and `ZMSCORE` of its sum in the month rollup (+1 since the sum moved there, which saves observe one command). Up to 4 days (which cannot pass the 20,000-bucket cap) a read is this one script; longer ones send a `ZPOPMIN` after it (next rows).",
    }),
    read30: r("histogram read", "30 days ending today", 7, {
      naive: 31,
      note: "This month's rollup stands for its days up to today (nothing is dated more than 5 minutes ahead), so the range is 8 days and one rollup. Past 4 days (4 × 5,000 buckets could reach the 20,000 cap) the parts are sized before any union (issue 15): `ZCARD` of the rollup (the 8 days, at most 5,001 entries each, cannot pass the 200,000-entry limit: no bound needed). The union goes to a scratch key of this request (`ZUNIONSTORE`, whose reply is its size), then the extremes' `ZUNION` and one `ZMSCORE` of the 8 days' sums; a `ZPOPMIN` sent after the script in the same HTTP request takes the union and deletes the key, so the script never loads it (at the 20,000-bucket cap that halves the script). Was: the 8 days bounded by their month's `ZCARD`, then one `ZUNION` into the script.",
    }),
    read30Past: r("histogram read", "30 days ending in the past", 7, {
      naive: 31,
      note: "17 days of one month and 13 of the next, read one by one: one `ZMSCORE` of their sums per month, one `ZUNIONSTORE` into this request's scratch key, one `ZUNION` of the extremes, and the `ZPOPMIN` after the script that takes the union (8 before: each month's days bounded by its rollup's `ZCARD` so that one `ZUNION` could load them into the script; 30 days cannot pass the 200,000-entry limit, so the bounds are not needed when the union goes to scratch anyway).",
    }),
    read400: r("histogram read", "400 days ending today", 19, {
      naive: 401,
      note: "Issue 15: days at the start, month rollups after (12 whole months and this month up to today: 13 days + 13 rollups instead of 400 days). Sized before any union: a `ZCARD` of each rollup, then one `ZUNIONSTORE` into a scratch key of this request (its reply is the union's size, checked against the cap), the extremes' `ZUNION`, one `ZMSCORE` of the 13 days' sums, and a `ZPOPMIN` sent after the script in the same HTTP request, which takes the union and deletes the key (the script never loads it). Was 19 too: a `ZCARD` of the first month bounding its 13 days, so that one `ZUNION` could load the union into the script; at the cap that took `ZUNIONSTORE`, `ZRANGE`, `UNLINK` in the script, now `ZUNIONSTORE` and the `ZPOPMIN`. A range of one month rollup reads it as it is (`ZRANGE`, one script). Before issue 15: 4 commands, but one `ZUNION` over all 400 days loaded into the script before its size check; before sizing: 9, but the union was built before the size was known (10 s at 2M entries).",
    }),
    read400Past: r("histogram read", "400 days ending in the past", 19, {
      naive: 401,
      note: "15 days, 12 rollups, 15 days: a `ZCARD` of each rollup, two `ZMSCORE`s of the edge days' sums, one `ZUNIONSTORE` into this request's scratch key, one `ZUNION` of the extremes, the `ZPOPMIN` after the script (20 before: the two edge months' `ZCARD`s bounded their days so that one `ZUNION` could load them; 30 edge days cannot pass the 200,000-entry limit, so no bound is needed when the union goes to scratch anyway).",
    }),
    read400Edges: r("histogram read", "364 days ending in the past, 30-day edges (most parts)", 18, {
      naive: 365,
      note: "69 parts (29 days, 10 rollups, 30 days), sized by 11 `ZCARD`s: the 10 rollups and one edge month (59 days at 5,001 entries could pass the 200,000-entry limit; bounded by it, they cannot), then `ZUNIONSTORE` into this request's scratch key, the extremes, the sums, and the `ZPOPMIN` after the script (was 12 `ZCARD`s, `ZUNION`). The most any read may spend is 60 (`MAX_READ_COMMANDS`): when a month's bound would refuse, its days are sized one by one within that budget (test/redis/histograms-bounds.test.ts).",
    }),
    readOld: r("histogram read", "400 days older than any retention", 2),
    list: r("histogram list", "steady", 5, {
      note: "Drops, in the same script, up to 1,000 names whose listing deadline has passed (`ZRANGE … BYSCORE` of `hist:_names`; a `ZREM` from it and one from the registry when there are some), `ZCARD` of both sets (the total; the counts differ only for a registry written before review 24, or by an older release during a deploy: then a `ZUNIONSTORE` and a `ZINTERSTORE` make the registry hold the same names, once), then one page by recent activity (review 24: 4 before, one set).",
    }),
    delete: r("histogram DELETE", "any", 4, {
      note: "`UNLINK` of the settings and every key that may hold data, and a `ZREM` from each of the two listing sets (3 before review 24).",
    }),
  },
} satisfies CostArea;
