import { createRoute, z } from "@hono/zod-openapi";
import { Receiver } from "@upstash/qstash";
import { NotFoundError, UnauthorizedError } from "../../src/errors.ts";
import { JOBS } from "../jobs.ts";
import { ctxOf } from "../middleware/context.ts";
import { requireScope } from "../middleware/auth.ts";
import { createRouter } from "../router.ts";
import { errorResponses, jsonResponse, notFoundResponse } from "../schemas.ts";
import type { AppEnv } from "../types.ts";
import { createMiddleware } from "hono/factory";

/**
 * QStash schedules call these with an `Upstash-Signature` JWT; operators may
 * call them with an admin key instead. A signature, when present, must be
 * valid (current or next signing key, this URL, this body): it is never
 * ignored in favour of another credential.
 */
const signedOrAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const signature = c.req.header("upstash-signature");
  if (signature === undefined) return requireScope("admin")(c, next);
  const { QSTASH_CURRENT_SIGNING_KEY: current, QSTASH_NEXT_SIGNING_KEY: nextKey } = c.env;
  if (!current || !nextKey) throw new UnauthorizedError("QStash signing keys are not configured here; call with an admin key.");
  const receiver = new Receiver({ currentSigningKey: current, nextSigningKey: nextKey });
  const body = await c.req.raw.clone().text();
  const valid = await receiver.verify({ signature, body, url: c.req.url }).catch(() => false);
  if (!valid) throw new UnauthorizedError("The Upstash-Signature is not valid for this URL and body.");
  await next();
});

const JobResult = z.object({ job: z.string(), startedAt: z.number(), result: z.record(z.string(), z.any()) }).openapi("JobResult");

export const jobRoutes = createRouter();
jobRoutes.use("/internal/jobs/*", signedOrAdmin);
jobRoutes.openapi(
  createRoute({
    method: "post",
    path: "/internal/jobs/{job}",
    tags: ["Operations"],
    summary: "Run a periodic job now (for QStash schedules): compact | trim | sweep-counters",
    description:
      "Accepted with a valid `Upstash-Signature` (QStash) or an admin key. Jobs are idempotent and safe to overlap. " +
      "`compact` (hourly): trims finished trending hours and precomputes window unions; `trim` (every minute): removes idle presence ids and samples concurrency; " +
      "`sweep-counters` (hourly): frees the bucket keys of deleted counters.",
    security: [{ bearerAuth: [] }, { qstashSignature: [] }],
    request: { params: z.object({ job: z.string().openapi({ param: { name: "job", in: "path" }, example: "compact" }) }) },
    responses: { 200: jsonResponse(JobResult, "The job ran."), ...errorResponses, ...notFoundResponse },
  }),
  async (c) => {
    const name = c.req.param("job") ?? "";
    const job = Object.hasOwn(JOBS, name) ? JOBS[name] : undefined;
    if (!job) throw new NotFoundError(`No job '${name}'; jobs: ${Object.keys(JOBS).join(", ") || "none"}.`);
    const startedAt = c.get("now");
    const result = await job(ctxOf(c), c.get("config"));
    return c.json({ job: name, startedAt, result }, 200);
  },
);
