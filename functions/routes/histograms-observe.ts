import * as z from "../zod.ts";
import { MAX_BATCH } from "../../src/validation.ts";
import { observe, type Observation } from "../../src/histograms/histograms.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { lazyRoute, once, prechecked } from "../lazy-route.ts";
import { atField, optional, required, scoreField, strictObject } from "../prechecks.ts";
import { createRouter } from "../router.ts";
import {
  At,
  batchPrecheck,
  jsonBody,
  jsonResponse,
  nameParamsChecked,
  notFoundResponse,
  Score,
  writeErrorResponses,
} from "../schemas.ts";

/**
 * The observations route (POST /v1/histograms/{histogram}/observations) and its schemas, in a
 * module of its own: a cold isolate's first observation loads this and the library's writes
 * (src/histograms/histograms.ts), not the other histogram routes nor the reads' code
 * (functions/routes/index.ts `Mount.alone`; ./histograms.ts includes the route at its place).
 */

const tags = ["Histograms"];
/** The histogram's name in the path, prechecked (../lazy-route.ts). */
const paramsChecked = () => nameParamsChecked("histogram");

const ObservationItem = once(() => z.object({ value: Score().openapi({ example: 60 }), at: At().optional() }).strict());

/** One observation, or `values` of up to 1,000 observations or bare numbers. */
export const ObservationBody = once(() =>
  z
    .union([
      ObservationItem(),
      z
        .object({
          values: z
            .array(z.union([Score(), ObservationItem()]))
            .min(1)
            .max(MAX_BATCH),
        })
        .strict(),
    ])
    .openapi("HistogramObservations", { example: { values: [60, 120, { value: 90, at: "2026-11-22T10:00:00Z" }] } }),
);

const Accepted = once(() => z.object({ accepted: z.number().int() }).openapi("HistogramAccepted"));

/**
 * ObservationBody's precheck (../lazy-route.ts `prechecked`): bodies zod accepts as they are (finite
 * values within ±1e15, `at` as epoch ms or a time `parseAt` takes) are decided without zod, so a
 * cold isolate's first observation loads none; any problem, zod decides and words.
 */
const observationItem = strictObject({ value: required(scoreField), at: optional(atField) });
export const observationsPrecheck = batchPrecheck(
  (item, path) => (path.length > 0 && typeof item === "number" ? scoreField(item) : observationItem(item)),
  "values",
);

export const observeRoutes = createRouter();

lazyRoute(
  observeRoutes,
  "post",
  "/{histogram}/observations",
  () => ({
    tags,
    summary: "Record one observation or a batch of up to 1,000",
    description:
      "Each value goes into the bucket of its UTC day (from `at`, default now). `at` must lie within the histogram's retention and at most 5 minutes ahead (else 400, nothing written). All or nothing. 404 when the histogram was never created with PUT.",
    request: { params: paramsChecked(), ...jsonBody(prechecked(ObservationBody, observationsPrecheck)) },
    responses: () => ({ 200: jsonResponse(Accepted(), "Recorded."), ...writeErrorResponses(), ...notFoundResponse() }),
  }),
  async (c) => {
    const { histogram } = c.req.valid("param");
    const body = c.req.valid("json");
    const list: Observation[] =
      "values" in body ? body.values.map((v) => (typeof v === "number" ? { value: v } : v)) : [body];
    const { replayed, ...accepted } = await observe(ctxOf(c), histogram, list, c.get("idempotency"));
    markReplay(c, replayed);
    return c.json(accepted, 200);
  },
);
