import * as z from "../zod.ts";
import * as limits from "../../src/counters/limits.ts";
import { PERIODS } from "../../src/time.ts";
import { MAX_INCREMENT } from "../../src/validation.ts";
import { ctxOf, markReplay, queueIfAsync } from "../middleware/context.ts";
import { lazyRoute, once, onFirstUse, prechecked } from "../lazy-route.ts";
import { createRouter } from "../router.ts";
import {
  batchOf,
  batchPrecheck,
  Increment,
  isPlainObject,
  jsonBody,
  jsonResponse,
  Member,
  memberPrecheck,
  nameParamsChecked,
  normalizeBatch,
  queuedResponse,
  writeErrorResponses,
} from "../schemas.ts";

/**
 * The counter increment's route (POST /v1/counters/{counter}/incr) and its schemas, in a module of
 * its own: a cold isolate's first increment, the commonest first write, loads this and the
 * increment's part of the library (functions/routes/index.ts `Mount.alone`), not the nine other
 * counters routes and their schemas (./counters.ts, which includes this route at its place). The
 * schemas the reads share with it (a period, a ttl, a scored member) are defined here.
 */

const tags = ["Counters"];

/** The increment's part of the library, loaded by the first increment (a refused one loads none of it). */
const counterIncrement = onFirstUse(() => import("../../src/counters/increment.ts"));

export const PeriodName = once(() =>
  z.enum(PERIODS).openapi({ description: "UTC calendar period (ISO weeks, Monday first)" }),
);

export const Ttl = once(() =>
  z.number().int().min(1).max(limits.MAX_TTL_SECONDS).openapi({
    description:
      "Seconds the written key lives. A key this write creates gets it. An existing key's expiry is only ever extended (when less than ttl is left, to ttl plus up to a tenth of it, at most 1 h more), never shortened; an existing key without expiry keeps none. In a batch a key gets the largest ttl of its items. So an ingest key cannot expire data beyond its own increments.",
  }),
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

export const Scored = once(() => z.object({ member: z.string(), score: z.number() }));

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
const incrBody = () => prechecked(() => batchOf(IncrItem(), "items"), incrPrecheck);

export type IncrBody = z.infer<ReturnType<typeof IncrItem>>;

/** The counter's name in the path, prechecked (../lazy-route.ts). */
const counterParamsChecked = () => nameParamsChecked("counter");

export const counterIncrRoutes = createRouter();

lazyRoute(
  counterIncrRoutes,
  "post",
  "/{counter}/incr",
  () => ({
    tags,
    summary: "Increment or decrement members (one item or up to 1,000), optionally into calendar buckets",
    description:
      "One Redis round trip including expiries. Without `ttl` an existing expiry stays and a new key never expires; with `ttl` an existing expiry is only ever extended (see `ttl`). Every score an increment leaves (in the plain counter, the bucket and each calendar rollup above it) must stay within ±1e15, where integers are exact; otherwise 400 and nothing of the batch is written (a queued write past it goes to the dead-letter queue).",
    request: { params: counterParamsChecked(), ...jsonBody(incrBody()) },
    responses: () => ({
      200: jsonResponse(
        z.object({ results: z.array(Scored()) }).openapi("CounterIncrResult"),
        "Each item's member and its score after the item.",
      ),
      202: queuedResponse(),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const { counter } = c.req.valid("param");
    const items = normalizeBatch(c.req.valid("json") as IncrBody | { items: IncrBody[] }, "items");
    const queued = await queueIfAsync(c, "counters", counter, items);
    if (queued) return c.json(queued, 202);
    const { replayed, ...result } = await (
      await counterIncrement()
    ).increment(ctxOf(c), counter, items, c.get("idempotency"));
    markReplay(c, replayed);
    return c.json(result, 200);
  },
);
