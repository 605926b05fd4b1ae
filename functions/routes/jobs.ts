import * as z from "../zod.ts";
import { NotFoundError } from "../../src/errors.ts";
import { JOBS } from "../jobs.ts";
import { ctxOf, redisOf } from "../middleware/context.ts";
import { markReplay } from "../middleware/replay.ts";
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
    // The summary names every job the route runs (it listed four of six; found in review 3).
    summary: `Run a periodic job now (for QStash schedules): ${Object.keys(JOBS).join(" | ")}`,
    description:
      "Accepted with a valid `Upstash-Signature` (QStash) or an admin key. Jobs are idempotent and safe to overlap. " +
      "A signed request sent again (the same signature) runs nothing: 200 `{result: {replayed: true}}` with `Idempotent-Replayed: true`. " +
      "`compact` (hourly): trims finished trending hours and completes the cached window unions built while an hour was not yet trimmed; " +
      "`trim` (every minute): removes idle presence ids and samples concurrency; " +
      "`sweep-counters` (hourly): frees the bucket keys of deleted counters; " +
      "`leaderboards.snapshot` (hourly, acts once per UTC day): copies each board without seasons into its daily snapshot (`previousRank`), in bounded slices; " +
      "`webhooks.trending` (hourly, after `compact`): finds trending entries and exits between the last two finished hours, then sends the deliveries due; " +
      "`webhooks` (every minute, after `trim`): finds rising members and presence peaks, then sends the deliveries due and retries failed ones.",
    // an admin key (the role names the scope, as every /v1 operation's does: ../openapi-document.ts `withScopes`)
    security: [{ bearerAuth: ["admin"] }, { qstashSignature: [] }],
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
    // a QStash signature that came before (../middleware/qstash.ts): its first call ran the job
    if (c.get("signatureReplayed")) {
      markReplay(c, true);
      return c.json({ job: name, startedAt, result: { replayed: true } }, 200);
    }
    const config = c.get("config");
    // a job's own client: its scripts may wait longer than an API call's (JOB_REDIS_TIMEOUT_MS)
    const ctx = { ...ctxOf(c), redis: redisOf(c.env, config.jobRedisTimeoutMs) };
    const result = await job(ctx, config);
    return c.json({ job: name, startedAt, result }, 200);
  },
);
