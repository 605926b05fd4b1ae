/**
 * The bounds and choices of counter requests that the routes' schemas and OpenAPI text state
 * (functions/routes/counters-schemas.ts). A module of their own, so the routes read them without
 * loading the library (./index.ts, ~47 KB minified), which a request refused by its schema never
 * needs: a cold isolate's refused write then compiles none of it.
 */

/**
 * Cache slots per counter: a finished range's union is cached in slot
 * hash(range) mod this, replacing the range the slot held. So a counter holds
 * at most this many cached unions, whatever ranges readers ask for.
 */
export const UNION_CACHE_SLOTS = 4;

/**
 * Most bucket entries (the sum of the cardinalities of the keys it would union) one read may union:
 * ZUNIONSTORE is linear in them: 14–50 ms of script at this size when the keys share their
 * members (measured with redis-server 7.0 on the bench machine; MAX_UNION_MEMBERS keeps distinct
 * ones far fewer), and the script holds its keys' lock while it runs (issue 15). Past it a top-N
 * sum is read from the keys by the threshold algorithm when its leaders stand out, and every other
 * read is refused (400 `too_many_entries`) before anything is unioned. A cached union of a range is
 * read in place whatever its size.
 */
export const MAX_UNION_ENTRIES = 100_000;

/**
 * Most entries one read may union when they may be as many distinct members: ZUNIONSTORE spends
 * about 1.5 µs on each member it makes against 0.2 µs on each entry it reads (100,000 entries took
 * 18 ms when they were 14,000 members, 130–200 ms when all distinct, on the bench machine). So a
 * union walks more than this only when its month rollups show it makes at most this many members
 * (their ZCARDs, which bound the union's members, are read for MAX_UNION_ENTRIES anyway).
 */
export const MAX_UNION_MEMBERS = 20_000;

/**
 * Largest absolute score a counter keeps (every key an increment or a union writes: the plain key,
 * a bucket and each calendar rollup above it). Scores are doubles: every integer up to 2^53
 * (about 9.007e15) is exact, and past it increments are rounded away (1e16 + 1 is 1e16). Within
 * this bound integer scores are exact, and a batch (at most 1,000 × 1e12 = 1e15) added to a score
 * within it stays below 2^53. The leaderboards' bound (MAX_SCORE), for the same reason.
 */
export const MAX_COUNTER_SCORE = 1e15;

/** Most members `sorted` reads in one call (it reads them all to order them). */
export const MAX_SORTED_MEMBERS = 10_000;

/** Most names the list endpoint returns per page (also its default page size). */
export const MAX_LISTED = 1000;

/** Longest `from..to` a period read or rollup may span. */
export const MAX_RANGE_DAYS = 400;

/** Largest TTL a write may set (ten years), so a typo cannot pin data for ever-ish. */
export const MAX_TTL_SECONDS = 10 * 366 * 86400;

/** Bucket times (`at`) may lie at most this far in the past (and at most MAX_BUCKET_AHEAD_MS ahead: ./validate.ts). */
export const MAX_BUCKET_AGE_DAYS = 400;

/** Most buckets a `min` or `max` read may union (a sum reads rollups; these cannot): 400 days of days. */
export const MAX_RAW_BUCKETS = 401;

/**
 * Most buckets and rollups one member delete may change (issue 15): each must lose the member
 * (a ZREM each), so the work grows with the keys holding it. The keys are found from the rollups
 * down (delete-script.ts), so a range up to 400 days passes when the member is in few of its keys
 * (and reads under MAX_DELETE_READS show it);
 * 1,750 is every key of any 60 days of hours (1,440 hours, their quarters, days and months: at most
 * 1,746), the most a call could clear before, about 2,500 commands and 15 ms of script.
 */
export const MAX_DELETE_KEYS = 1750;

/**
 * Most keys one member delete *script* may reach (issue 15: a script holds Redis while it runs).
 * A delete whose member may be in more (up to MAX_DELETE_KEYS) runs as several scripts in the one
 * call, each over a part of the range whose plan has at most this many keys (src/counters/counters.ts,
 * `deleteMember`). Measured with bench/scaling/dense-delete.ts (redis-server 7.0, a shared 2-core
 * machine): a member in every key of 60 days of hours (1,745 keys, 3,235 commands) took 35 ms of
 * script at 1,000 members an hour key and 53 ms at 10,000 (medians; up to 130 ms under load);
 * in parts of at most 600 keys its longest script was 9–10 ms (17 ms at most). 400 days of days
 * (413 keys, 852 commands, 7–13 ms at 10,000 and 100,000 members a day key) stay one script.
 */
export const MAX_DELETE_SCRIPT_KEYS = 600;

/**
 * Most commands a member delete spends (its EVALSHA included) before it knows it fits under
 * MAX_DELETE_KEYS (issue 15: a refusal must be cheap too). The script bounds the keys that may hold
 * the member from the rollups down, each rollup found lacking it taking the keys below it off the
 * bound; past this many commands without bringing the bound to MAX_DELETE_KEYS (or as soon as the
 * reads left cannot) it is refused. A range of at most 60 days never reads for it: its keys are
 * fewer than MAX_DELETE_KEYS whatever they hold. Before, a refusal proved its count by ZSCOREs:
 * up to ~1,750 of them (382 commands in docs/costs.md's state).
 */
export const MAX_DELETE_READS = 60;

/**
 * Most commands a read of an `hour` or `day` counter may make past its sizing (issue 15), its
 * EVALSHA included: the threshold algorithm's rounds and a `min`/`max` member read's ZSCOREs are
 * held to it, and so are a week counter's past the bound (its threshold rounds; a member read's
 * one bounded union and ZSCOREs of the weeks left out, else a 400: week-size.ts `lookupPlan`).
 * Month counters (≤ 15 keys over 400 days) and a `sum` member read whose edge plan cannot answer
 * exactly (a ZSCORE per key) are not (docs/counters.md).
 */
export const MAX_READ_COMMANDS = 60;

/**
 * Most ZCARDs a `min`/`max` read of an `hour` or `day` counter spends bounding the entries its
 * union would walk (issue 15), month rollups' included. The months settle most reads; past them a
 * key each, which 400 days of days (401 buckets) would pass: such a read is refused (400
 * `too_many_entries`, naming this) once the keys left unsized could still pass the bound. 44, so
 * that the union, its cache and the answer fit in MAX_READ_COMMANDS after them. A week read whose
 * size records sum past the bound takes at most this many ZCARDs to settle it (issue 15: 56 showed
 * 58 weeks of 360 members past it; week-size.ts `entriesOfWeeks`). Sums (≤ ~120 calendar parts),
 * month counters and weeks without a record are sized whole (resolve.ts `sizeBudget`).
 */
export const MAX_SIZE_READS = 44;

/** Most source keys (after expanding period sources into buckets) one rollup may union. */
export const MAX_UNION_KEYS = 1000;

/** How a member's scores combine across buckets. */
export type Aggregate = "sum" | "min" | "max";
export const AGGREGATES: readonly Aggregate[] = ["sum", "min", "max"];

/** A list's `order` and what it sorts `by`: the routes' enums and the library's check of them (src/library/inputs.ts). */
export const ORDERS = ["asc", "desc"] as const;
export const SORT_KEYS = ["member", "score"] as const;
