import * as z from "../zod.ts";
import { NotFoundError } from "../../src/errors.ts";
import { JOBS } from "../jobs.ts";
import { ctxOf, redisOf } from "../middleware/context.ts";
import { lazyRoute, once, prechecked } from "../lazy-route.ts";
import { fieldsPrecheck, required, textField } from "../prechecks.ts";
import { createRouter } from "../router.ts";
import { errorResponses, jsonResponse, notFoundResponse } from "../schemas.ts";

const JobResult = once(() =>
  z.object({ job: z.string(), startedAt: z.number(), result: z.record(z.string(), z.any()) }).openapi("JobResult"),
);

/**
 * The path parameters, and their precheck: any job name is text (an unknown one is a 404), so a
 * schedule's call to a cold isolate loads no zod (~8 ms of CPU: ../zod.ts).
 */
export const JobParams = once(() =>
  z.object({ job: z.string().openapi({ param: { name: "job", in: "path" }, example: "compact" }) }),
);
export const jobParamsPrecheck = fieldsPrecheck({ job: required(textField()) });

export const jobRoutes = createRouter();
// Authentication (signedOrAdmin) is mounted on /internal/* in app.ts, before the body guard.
lazyRoute(
  jobRoutes,
  "post",
  "/internal/jobs/{job}",
  () => ({
    tags: ["Operations"],
    summary: "Run a periodic job now (for QStash schedules): compact | trim | sweep-counters | leaderboards.snapshot",
    description:
      "Accepted with a valid `Upstash-Signature` (QStash) or an admin key. Jobs are idempotent and safe to overlap. " +
      "`compact` (hourly): trims finished trending hours and precomputes window unions; `trim` (every minute): removes idle presence ids and samples concurrency; " +
      "`sweep-counters` (hourly): frees the bucket keys of deleted counters; " +
      "`leaderboards.snapshot` (hourly, acts once per UTC day): copies each board without seasons into its daily snapshot (`previousRank`), in bounded slices.",
    security: [{ bearerAuth: [] }, { qstashSignature: [] }],
    request: {
      params: prechecked(JobParams, jobParamsPrecheck),
    },
    responses: () => ({ 200: jsonResponse(JobResult(), "The job ran."), ...errorResponses(), ...notFoundResponse() }),
  }),
  async (c) => {
    const name = c.req.param("job") ?? "";
    const job = Object.hasOwn(JOBS, name) ? JOBS[name] : undefined;
    if (!job) throw new NotFoundError(`No job '${name}'; jobs: ${Object.keys(JOBS).join(", ") || "none"}.`);
    const startedAt = c.get("now");
    const config = c.get("config");
    // a job's own client: its scripts may wait longer than an API call's (JOB_REDIS_TIMEOUT_MS)
    const ctx = { ...ctxOf(c), redis: redisOf(c.env, config.jobRedisTimeoutMs) };
    const result = await job(ctx, config);
    return c.json({ job: name, startedAt, result }, 200);
  },
);
