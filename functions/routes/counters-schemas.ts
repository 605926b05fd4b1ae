import * as z from "../zod.ts";
import * as limits from "../../src/counters/limits.ts";
import { PERIODS } from "../../src/time.ts";
import { once, prechecked } from "../lazy-route.ts";
import {
  defaulted,
  fieldsPrecheck,
  intField,
  memberField,
  nameField,
  oneOf,
  oneOfField,
  textField,
} from "../prechecks.ts";
import { MAX_INCREMENT, MAX_OFFSET } from "../../src/validation.ts";
import {
  batchOf,
  batchPrecheck,
  Increment,
  intQuery,
  isPlainObject,
  Member,
  memberPrecheck,
  Name,
  nameParams,
  nameParamsChecked,
} from "../schemas.ts";

/**
 * Schemas of the counters routes (./counters.ts), each a memoised factory
 * built by the first route that needs it (see ../lazy-route.ts).
 */

export const PeriodName = once(() =>
  z.enum(PERIODS).openapi({ description: "UTC calendar period (ISO weeks, Monday first)" }),
);
export const Aggregate = once(() =>
  z.enum(limits.AGGREGATES).openapi({
    description: `How a member's scores combine across buckets; a member missing from a bucket is skipped, not counted as 0. A sum reads calendar rollups; min and max read every bucket, at most ${limits.MAX_RAW_BUCKETS}. @default sum`,
  }),
);
export const Ttl = once(() =>
  z.number().int().min(1).max(limits.MAX_TTL_SECONDS).openapi({
    description:
      "Seconds the written key lives. A key this write creates gets it. An existing key's expiry is only ever extended (when less than ttl is left, to ttl plus up to a tenth of it, at most 1 h more), never shortened; an existing key without expiry keeps none. In a batch a key gets the largest ttl of its items. So an ingest key cannot expire data beyond its own increments.",
  }),
);
const ORDERS = ["asc", "desc"] as const;
const SORT_KEYS = ["member", "score"] as const;
export const Order = once(() => z.enum(ORDERS));
export const TimeQuery = once(() =>
  z.string().openapi({ description: "epoch ms or ISO-8601 (a date such as 2026-11-01 is its UTC midnight)" }),
);
/**
 * A time in a body, parsed by the library rather than by the shared `At`, so a
 * date that does not exist (2026-02-30) is refused instead of rolled into March.
 */
export const TimeValue = once(() =>
  z.union([z.number().int(), z.string()]).openapi({
    type: "string",
    description: "epoch ms or ISO-8601; a real date in years 1000..9999",
    example: "2026-11-22T15:04:05Z",
  }),
);
/** `at` of an increment: like TimeValue, and bounded by what a bucket can usefully store. */
export const AtValue = once(() =>
  TimeValue().openapi({
    description: `the time the increment belongs to; only with period. At most ${limits.MAX_BUCKET_AGE_DAYS} days (and at most the item's ttl) in the past, at most 5 minutes ahead. @default now`,
  }),
);

/** Query options every read takes to read the union of period buckets instead of the plain counter. */
export const periodQuery = once(() => ({
  period: PeriodName().optional().openapi({
    description: "Read the buckets of this period from `from` to `to` instead of the plain counter.",
  }),
  from: TimeQuery().optional().openapi({
    description: `First period (the one containing this time). Needs period. @default the period of \`to\``,
  }),
  to: TimeQuery()
    .optional()
    .openapi({
      description: `Last period, inclusive; at most ${limits.MAX_RANGE_DAYS} days after from. Needs period. @default now`,
    }),
  aggregate: Aggregate().optional(),
}));

/** The query of top and bottom. */
export const RankingQuery = once(() => z.object({ n: intQuery(1, 1000, 10), ...periodQuery() }));

/** What each of `periodQuery()`'s fields makes of the usual inputs (../prechecks.ts). */
const periodFields = {
  period: oneOfField(PERIODS),
  from: textField(),
  to: textField(),
  aggregate: oneOfField(limits.AGGREGATES),
};

/**
 * RankingQuery's precheck (../lazy-route.ts `prechecked`): `n` in plain digits, a period and an
 * aggregate of the lists, `from` and `to` as text (the library parses them), or none of them;
 * anything else, zod decides. So a cold isolate's first top or bottom loads no zod.
 */
export const rankingQueryPrecheck = fieldsPrecheck({ n: intField(1, 1000, 10), ...periodFields });

/** The query of a score range, and its precheck: the usual bounds are text the library parses. */
export const ScoreRangeQuery = once(() =>
  z.object({
    min: z.string().default("-inf").openapi({ example: "10" }),
    max: z.string().default("+inf").openapi({ example: "+inf" }),
    limit: intQuery(1, 1000, 100),
    order: Order().default("asc").openapi({ description: "asc: lowest score first. @default asc" }),
    ...periodQuery(),
  }),
);
export const scoreRangeQueryPrecheck = fieldsPrecheck({
  min: defaulted(textField(), "-inf"),
  max: defaulted(textField(), "+inf"),
  limit: intField(1, 1000, 100),
  order: defaulted(oneOf(ORDERS), "asc"),
  ...periodFields,
});

/** The query of the sorted list, and its precheck. */
export const SortedQuery = once(() =>
  z.object({
    by: z.enum(SORT_KEYS).default("member"),
    order: Order().default("asc"),
    ...periodQuery(),
  }),
);
export const sortedQueryPrecheck = fieldsPrecheck({
  by: defaulted(oneOf(SORT_KEYS), "member"),
  order: defaulted(oneOf(ORDERS), "asc"),
  ...periodFields,
});

/** The query of the counters' list, and its precheck (`limit` and `offset` in plain digits). */
export const ListQuery = once(() =>
  z.object({
    limit: intQuery(1, limits.MAX_LISTED, limits.MAX_LISTED),
    offset: intQuery(0, MAX_OFFSET, 0).openapi({
      description: "names to skip: the previous page's nextOffset. @default 0",
    }),
  }),
);
export const listQueryPrecheck = fieldsPrecheck({
  limit: intField(1, limits.MAX_LISTED, limits.MAX_LISTED),
  offset: intField(0, MAX_OFFSET, 0),
});

/** The query of a member delete: `periodQuery()` without `aggregate`. */
export const DeleteQuery = once(() =>
  z.object({ period: periodQuery().period, from: periodQuery().from, to: periodQuery().to }),
);
export const deleteQueryPrecheck = fieldsPrecheck({
  period: periodFields.period,
  from: periodFields.from,
  to: periodFields.to,
});

/** The query of a member lookup: `periodQuery()`. */
export const MemberQuery = once(() => z.object(periodQuery()));
/** MemberQuery's precheck, as RankingQuery's. */
export const memberQueryPrecheck = fieldsPrecheck(periodFields);

export const RangeInfo = once(() =>
  z
    .object({
      period: PeriodName(),
      from: z.number().int().openapi({ description: "start of the first period, epoch ms" }),
      to: z.number().int().openapi({ description: "start of the last period, epoch ms" }),
      aggregate: Aggregate(),
      buckets: z.number().int(),
      finished: z.boolean().openapi({ description: "the range has ended, so its union is cached" }),
    })
    .openapi("CounterRange"),
);

export const Scored = once(() => z.object({ member: z.string(), score: z.number() }));
export const RankedItem = once(() =>
  Scored()
    .extend({ rank: z.number().int().openapi({ description: "1-based" }) })
    .openapi("CounterRankedItem"),
);

export const IncrItem = once(() =>
  z
    .object({
      member: Member(),
      by: Increment().optional().openapi({
        description: "may be negative (a decrement); the score it leaves must stay within ±1e15. @default 1",
      }),
      period: PeriodName().optional().openapi({
        description: "store in the bucket of this UTC period. @default none (the plain counter)",
      }),
      at: AtValue().optional(),
      ttl: Ttl().optional(),
    })
    .openapi("CounterIncrement"),
);

const INCR_KEYS = new Set(["member", "by", "period", "at", "ttl"]);
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);

/**
 * The precheck (../lazy-route.ts) of the increment body, `batchOf(IncrItem(), "items")`: valid
 * items and bad members are decided without zod (the data in IncrItem's key order, as zod gives
 * it); any other problem, zod decides.
 */
export const incrPrecheck = batchPrecheck((item, path, issues) => {
  if (!isPlainObject(item)) return undefined;
  for (const key in item) if (!INCR_KEYS.has(key)) return undefined;
  const { by, period, at, ttl } = item;
  const member = memberPrecheck(item.member, [...path, "member"], issues);
  if (member === undefined) return undefined;
  const data: Record<string, unknown> = { member };
  if ("by" in item) {
    if (typeof by !== "number" || !(Math.abs(by) <= MAX_INCREMENT)) return undefined;
    data.by = by;
  }
  if ("period" in item) {
    if (!(PERIODS as readonly unknown[]).includes(period)) return undefined;
    data.period = period;
  }
  if ("at" in item) {
    if (!isInt(at) && typeof at !== "string") return undefined;
    data.at = at;
  }
  if ("ttl" in item) {
    if (!isInt(ttl) || ttl < 1 || ttl > limits.MAX_TTL_SECONDS) return undefined;
    data.ttl = ttl;
  }
  return data;
}, "items");

/** The increment body, prechecked. */
export const incrBody = () => prechecked(() => batchOf(IncrItem(), "items"), incrPrecheck);

export type IncrBody = z.infer<ReturnType<typeof IncrItem>>;

export const UnionSource = once(() =>
  z.union([
    Name().openapi({ description: "another counter (its plain key)" }),
    z
      .object({ counter: Name(), period: PeriodName(), from: TimeValue().optional(), to: TimeValue().optional() })
      .strict()
      .openapi({ description: "a counter's buckets of `period` from `from` to `to` (defaults as for reads)" }),
  ]),
);

export const counterParams = once(() => nameParams("counter"));
/** `counterParams()`, prechecked (../lazy-route.ts). */
export const counterParamsChecked = () => nameParamsChecked("counter");
export const memberParams = once(() =>
  counterParams().extend({ member: Member().openapi({ param: { name: "member", in: "path" } }) }),
);
/** memberParams' precheck: a counter name and a valid member, else zod decides. */
export const memberParamsPrecheck = fieldsPrecheck({ counter: nameField, member: memberField });
export const noContent = { description: "Done (also when there was nothing to delete)." };
