import * as z from "../zod.ts";
import * as histograms from "../../src/histograms/index.ts";
import { MAX_OFFSET } from "../../src/validation.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { includeRoutes, lazyRoute, once, prechecked } from "../lazy-route.ts";
import { observeRoutes } from "./histograms-observe.ts";
import { fieldsPrecheck, intField, maxTextField, textField } from "../prechecks.ts";
import { ACTIVITY_CURSOR_MAX } from "../../src/redis/pages.ts";
import { createRouter } from "../router.ts";
import {
  errorResponses,
  intQuery,
  jsonBody,
  jsonResponse,
  nameParams,
  nameParamsChecked,
  notFoundResponse,
  writeErrorResponses,
} from "../schemas.ts";

export { ObservationBody, observationsPrecheck } from "./histograms-observe.ts";

const tags = ["Histograms"];
const params = once(() => nameParams("histogram"));
/** `params()`, prechecked (../lazy-route.ts). */
const paramsChecked = () => nameParamsChecked("histogram");

const Settings = once(() =>
  z
    .object({
      bucketWidth: z
        .number()
        .finite()
        .positive()
        .max(histograms.MAX_BUCKET_WIDTH)
        .openapi({ example: 10, description: "width of every bucket, in the unit of the values" }),
      unit: z
        .string()
        .min(1)
        .max(histograms.MAX_UNIT_LENGTH)
        .optional()
        .openapi({ example: "s", description: "a label echoed on reads; default none" }),
      retentionDays: z
        .number()
        .int()
        .min(1)
        .max(histograms.MAX_RETENTION_DAYS)
        .optional()
        .openapi({
          example: 30,
          description: `days each UTC day is kept after it ends; default ${histograms.MAX_RETENTION_DAYS}`,
        }),
    })
    .strict()
    .openapi("HistogramSettings"),
);

const HistogramInfo = once(() =>
  z
    .object({
      histogram: z.string(),
      bucketWidth: z.number(),
      unit: z.string().nullable(),
      retentionDays: z.number().int(),
      createdAt: z.number().int().openapi({ description: "epoch ms of the first PUT" }),
      created: z.boolean(),
    })
    .openapi("HistogramInfo"),
);

const Bucket = once(() =>
  z
    .object({ lower: z.number(), upper: z.number(), count: z.number().int() })
    .openapi("HistogramBucket", { description: "values v with lower ≤ v < upper" }),
);

const Summary = once(() =>
  z
    .object({
      histogram: z.string(),
      unit: z.string().nullable(),
      bucketWidth: z.number(),
      from: z.string().openapi({ example: "2026-11-16" }),
      to: z.string().openapi({ example: "2026-11-22" }),
      count: z.number().int(),
      sum: z.number().openapi({
        description:
          "sum of the values as doubles: exact for integers whose magnitudes sum to at most 2^53, otherwise each addition rounded to the nearest double",
      }),
      min: z.number().nullable().openapi({ description: "exact smallest value; null when count is 0" }),
      max: z.number().nullable().openapi({ description: "exact largest value; null when count is 0" }),
      mean: z.number().nullable().openapi({
        description: "sum / count, rounded to the nearest double and clamped to min..max; null when count is 0",
      }),
      p50: z
        .number()
        .nullable()
        .openapi({ description: "estimated by interpolating within its bucket; off by less than bucketWidth" }),
      p90: z.number().nullable(),
      p99: z.number().nullable(),
      buckets: z.array(Bucket()).openapi({ description: "non-empty buckets ordered by value" }),
      top: z.array(Bucket()).openapi({ description: "the fullest buckets, fuller first (ties: lower bucket first)" }),
    })
    .openapi("HistogramSummary"),
);

/** A UTC day, YYYY-MM-DD; empty counts as absent, so a form that sends `from=&to=` gets today. */
const DAY_TEXT = /^(\d{4}-\d{2}-\d{2})?$/;
const DAY_RULE = "must be a date YYYY-MM-DD";
const Day = once(() => z.string().regex(DAY_TEXT, DAY_RULE).optional().openapi({ example: "2026-11-22" }));

/** The query of a histogram read. */
export const ReadQuery = once(() =>
  z.object({
    from: Day().openapi({ description: "first UTC day; default `to`" }),
    to: Day().openapi({
      description: `last UTC day, inclusive; default today; at most ${histograms.MAX_RETENTION_DAYS} days from 'from'`,
    }),
    top: intQuery(0, histograms.MAX_TOP, histograms.DEFAULT_TOP).openapi({
      description: "how many of the fullest buckets to list",
    }),
  }),
);
/**
 * ReadQuery's precheck (../lazy-route.ts `prechecked`): days as YYYY-MM-DD text (the library
 * checks the dates), `top` in plain digits; anything else, zod decides. So a cold isolate's first
 * histogram read loads no zod.
 */
export const readQueryPrecheck = fieldsPrecheck({
  from: textField((day) => DAY_TEXT.test(day), DAY_RULE),
  to: textField((day) => DAY_TEXT.test(day), DAY_RULE),
  top: intField(0, histograms.MAX_TOP, histograms.DEFAULT_TOP),
});

/** The query of the histograms' list, and its precheck (`offset` and `limit` in plain digits). */
export const ListQuery = once(() =>
  z.object({
    offset: intQuery(0, MAX_OFFSET, 0).openapi({
      description: "names to skip: `next` of the previous page (0 with a cursor)",
    }),
    limit: intQuery(1, histograms.MAX_LIST, histograms.MAX_LIST).openapi({ description: "most names to return" }),
    cursor: z.string().max(ACTIVITY_CURSOR_MAX).optional().openapi({ description: "nextCursor of the previous page" }),
  }),
);
export const listQueryPrecheck = fieldsPrecheck({
  offset: intField(0, MAX_OFFSET, 0),
  limit: intField(1, histograms.MAX_LIST, histograms.MAX_LIST),
  cursor: maxTextField(ACTIVITY_CURSOR_MAX),
});

export const histogramsRoutes = createRouter();

lazyRoute(
  histogramsRoutes,
  "get",
  "/",
  () => ({
    tags,
    summary: "Names of the histograms with live data, most recently active first, a page at a time",
    description:
      "Ordered by the time of the write that last extended each histogram's listing (its creation, its newest day's first observation, a PUT on a later day or with a new retention), latest first (the same time: by name in reverse byte order). A histogram whose data has all expired leaves the list (its settings stay; its next observation lists it again). Page with `cursor`: the first page, then `nextCursor` until it is null; such a pass lists every histogram listed throughout at least once (one extended after its first page follows at its end, so a name may be listed twice). `offset` = the previous page's `next` pages by position: a histogram leaving the list or moving up between two pages makes such a pass skip one.",
    request: { query: prechecked(ListQuery, listQueryPrecheck) },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            histograms: z.array(z.string()),
            total: z.number().int().openapi({ description: "names listed in all" }),
            next: z.number().int().nullable().openapi({
              description: "offset of the next page; null on the last, and on a page asked for by cursor",
            }),
            nextCursor: z.string().nullable().openapi({
              description:
                "pass as cursor for the next page; null on the last, and on a page asked for by an offset above 0",
            }),
          })
          .openapi("HistogramList"),
        "A page of names.",
      ),
      ...errorResponses(),
    }),
  }),
  async (c) => c.json(await histograms.list(ctxOf(c), c.req.valid("query")), 200),
);

lazyRoute(
  histogramsRoutes,
  "put",
  "/{histogram}",
  () => ({
    tags,
    summary: "Create a histogram or replace its settings (admin)",
    description:
      "An omitted unit or retentionDays goes back to its default. Changing bucketWidth while the histogram holds data is a 409; a new retentionDays re-times the stored days at once.",
    middleware: [requireScope("admin")] as const,
    request: { params: params(), ...jsonBody(Settings()) },
    responses: () => ({
      200: jsonResponse(HistogramInfo(), "Settings replaced."),
      201: jsonResponse(HistogramInfo(), "Histogram created."),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const { histogram } = c.req.valid("param");
    const { replayed, ...info } = await histograms.put(ctxOf(c), histogram, c.req.valid("json"), c.get("idempotency"));
    markReplay(c, replayed);
    return c.json(info, info.created ? 201 : 200);
  },
);

includeRoutes(histogramsRoutes, observeRoutes);

lazyRoute(
  histogramsRoutes,
  "get",
  "/{histogram}",
  () => ({
    tags,
    summary:
      "Distribution over UTC days from..to: buckets, count, exact count/min/max, sum and mean as doubles, p50/p90/p99, fullest buckets",
    request: { params: paramsChecked(), query: prechecked(ReadQuery, readQueryPrecheck) },
    responses: () => ({
      200: jsonResponse(Summary(), "The distribution."),
      ...errorResponses(),
      ...notFoundResponse(),
    }),
  }),
  async (c) => {
    const { histogram } = c.req.valid("param");
    const { from, to, top } = c.req.valid("query");
    return c.json(
      await histograms.read(ctxOf(c), histogram, { from: from || undefined, to: to || undefined, top }),
      200,
    );
  },
);

lazyRoute(
  histogramsRoutes,
  "delete",
  "/{histogram}",
  () => ({
    tags,
    summary: "Delete a histogram: settings, every stored day, registry entry (admin)",
    description: "Idempotent: 204 whether or not it existed.",
    middleware: [requireScope("admin")] as const,
    request: { params: paramsChecked() },
    responses: () => ({ 204: { description: "Deleted." }, ...errorResponses() }),
  }),
  async (c) => {
    await histograms.remove(ctxOf(c), c.req.valid("param").histogram);
    return c.body(null, 204);
  },
);
