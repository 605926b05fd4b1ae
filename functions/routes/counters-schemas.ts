import * as z from "../zod.ts";
import * as limits from "../../src/counters/limits.ts";
import { PERIODS } from "../../src/time.ts";
import { once } from "../lazy-route.ts";
import { PeriodName, Scored, TimeValue } from "./counters-incr.ts";
import {
  defaulted,
  fieldsPrecheck,
  intField,
  maxTextField,
  memberField,
  nameField,
  oneOf,
  oneOfField,
  textField,
} from "../prechecks.ts";
import { ACTIVITY_CURSOR_MAX } from "../../src/redis/pages.ts";
import { MAX_OFFSET } from "../../src/validation.ts";
import { intQuery, Member, Name, nameParams, nameParamsChecked } from "../schemas.ts";

/**
 * Schemas of the counters routes (./counters.ts), each a memoised factory
 * built by the first route that needs it (see ../lazy-route.ts). Those of the increment are in its
 * own module (./counters-incr.ts), which a cold isolate's first increment loads without these.
 */
export { AtValue, type IncrBody, IncrItem, incrPrecheck, PeriodName, Scored, TimeValue, Ttl } from "./counters-incr.ts";

export const Aggregate = once(() =>
  z.enum(limits.AGGREGATES).openapi({
    description: `How a member's scores combine across buckets; a member missing from a bucket is skipped, not counted as 0. A sum reads calendar rollups; min and max read every bucket, at most ${limits.MAX_RAW_BUCKETS}. @default sum`,
  }),
);
const { ORDERS, SORT_KEYS } = limits;
export const Order = once(() => z.enum(ORDERS));
export const TimeQuery = once(() =>
  z.string().openapi({ description: "epoch ms or ISO-8601 (a date such as 2026-11-01 is its UTC midnight)" }),
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
      description: "names to skip: the previous page's nextOffset (0 with a cursor). @default 0",
    }),
    cursor: z.string().max(ACTIVITY_CURSOR_MAX).optional().openapi({ description: "nextCursor of the previous page" }),
  }),
);
export const listQueryPrecheck = fieldsPrecheck({
  limit: intField(1, limits.MAX_LISTED, limits.MAX_LISTED),
  offset: intField(0, MAX_OFFSET, 0),
  cursor: maxTextField(ACTIVITY_CURSOR_MAX),
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

export const RankedItem = once(() =>
  Scored()
    .extend({ rank: z.number().int().openapi({ description: "1-based" }) })
    .openapi("CounterRankedItem"),
);

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
