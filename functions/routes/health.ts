import * as z from "../zod.ts";
import { UnauthorizedError } from "../../src/errors.ts";
import { redactError, type ErrorAnswer } from "../errors.ts";
import { scopesOf } from "../middleware/auth.ts";
import { ctxOf } from "../middleware/context.ts";
import { limitRequest } from "../middleware/rate-limit.ts";
import { lazyRoute, once, prechecked, type Verdict } from "../lazy-route.ts";
import { fieldsPrecheck, oneOfField } from "../prechecks.ts";
import { createRouter } from "../router.ts";
import { errorResponses, jsonResponse } from "../schemas.ts";

const Health = once(() =>
  z
    .object({
      ok: z.boolean(),
      redis: z
        .object({ ok: z.boolean(), latencyMs: z.number() })
        .optional()
        .openapi({ description: "Only with a read or admin key, or with `deep=1` and any API key." }),
      error: z.object({ code: z.string(), message: z.string() }).optional(),
    })
    .openapi("Health"),
);

/**
 * `/healthz` answers from the Worker alone: no key, no Redis call, so anyone
 * may poll it for free. With a read or admin key (as the contract says), or
 * with `deep=1` and a key of any scope, it also PINGs Redis (one command):
 * the Redis check is neither free commands nor a latency probe for strangers.
 */
export const HealthQuery = () =>
  z.object({
    deep: z.enum(["0", "1"]).optional().openapi({ description: "1: also PING Redis (needs an API key of any scope)." }),
  });

/**
 * HealthQuery's precheck (../lazy-route.ts): a query without `deep`, or with `deep` 0 or 1, and
 * any other `deep` (refused), is decided without zod (a monitor's probe may well be a cold isolate's first request).
 */
export const healthQueryPrecheck: (value: unknown) => Verdict = fieldsPrecheck({ deep: oneOfField(["0", "1"]) });

export const healthRoutes = createRouter();

lazyRoute(
  healthRoutes,
  "get",
  "/healthz",
  () => ({
    tags: ["Operations"],
    summary:
      "Liveness (no key, no Redis call); with a read or admin key (or deep=1 and any key), Redis reachability (one PING)",
    security: [{}, { bearerAuth: [] }],
    request: { query: prechecked(HealthQuery, healthQueryPrecheck) },
    responses: () => ({
      200: jsonResponse(Health(), "The Worker is up (and with deep=1, Redis too)."),
      503: jsonResponse(Health(), "deep=1: Redis is unreachable."),
      401: errorResponses()[401],
      429: errorResponses()[429],
    }),
  }),
  async (c) => {
    const deep = c.req.query("deep") === "1";
    const authorization = c.req.header("authorization");
    if (!deep && authorization === undefined) return c.json({ ok: true }, 200);
    const caller = await scopesOf(c.env, authorization);
    if (!caller) {
      throw new UnauthorizedError(
        "The Redis check of /healthz needs a valid API key; /healthz without a key needs none.",
      );
    }
    if (!deep && !caller.scopes.has("read")) return c.json({ ok: true }, 200);
    // The PING is Redis work a key asks for: it counts against the key's rate limit, and a key
    // over its limit gets 429 without it (it was unlimited: review 17).
    c.set("keyId", caller.keyId);
    await limitRequest(c);
    const started = performance.now();
    try {
      await ctxOf(c).redis.ping();
      const latencyMs = Math.round((performance.now() - started) * 10) / 10;
      return c.json({ ok: true, redis: { ok: true, latencyMs } }, 200);
    } catch (error) {
      console.error(`healthz: redis unreachable: ${redactError(error)}`);
      const latencyMs = Math.round((performance.now() - started) * 10) / 10;
      return c.json(
        {
          ok: false,
          redis: { ok: false, latencyMs },
          error: { code: "storage_unavailable", message: "Redis is unreachable." } satisfies ErrorAnswer,
        },
        503,
      );
    }
  },
);
