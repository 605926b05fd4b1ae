import { createRoute, z } from "@hono/zod-openapi";
import { UnauthorizedError } from "../../src/errors.ts";
import { redactError } from "../errors.ts";
import { scopesOf } from "../middleware/auth.ts";
import { ctxOf } from "../middleware/context.ts";
import { createRouter } from "../router.ts";
import { errorResponses, jsonResponse } from "../schemas.ts";

const Health = z
  .object({
    ok: z.boolean(),
    redis: z
      .object({ ok: z.boolean(), latencyMs: z.number() })
      .optional()
      .openapi({ description: "Only with `deep=1` (which needs an API key)." }),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  })
  .openapi("Health");

/**
 * `/healthz` answers from the Worker alone: no key, no Redis call, so anyone
 * may poll it for free. `/healthz?deep=1` also PINGs Redis (one command) and
 * needs an API key of any scope, so the Redis check is neither free commands
 * nor a latency probe for strangers.
 */
export const healthRoutes = createRouter().openapi(
  createRoute({
    method: "get",
    path: "/healthz",
    tags: ["Operations"],
    summary: "Liveness (no key, no Redis call); with deep=1 and any API key, Redis reachability (one PING)",
    security: [{}, { bearerAuth: [] }],
    request: {
      query: z.object({
        deep: z.enum(["0", "1"]).optional().openapi({ description: "1: also PING Redis (needs an API key of any scope)." }),
      }),
    },
    responses: {
      200: jsonResponse(Health, "The Worker is up (and with deep=1, Redis too)."),
      503: jsonResponse(Health, "deep=1: Redis is unreachable."),
      401: errorResponses[401],
    },
  }),
  async (c) => {
    if (c.req.query("deep") !== "1") return c.json({ ok: true }, 200);
    if (!(await scopesOf(c.env, c.req.header("authorization")))) {
      throw new UnauthorizedError("/healthz?deep=1 checks Redis and needs an API key of any scope; /healthz without deep needs none.");
    }
    const started = performance.now();
    try {
      await ctxOf(c).redis.ping();
      const latencyMs = Math.round((performance.now() - started) * 10) / 10;
      return c.json({ ok: true, redis: { ok: true, latencyMs } }, 200);
    } catch (error) {
      console.error(`healthz: redis unreachable: ${redactError(error)}`);
      const latencyMs = Math.round((performance.now() - started) * 10) / 10;
      return c.json(
        { ok: false, redis: { ok: false, latencyMs }, error: { code: "storage_unavailable", message: "Redis is unreachable." } },
        503,
      );
    }
  },
);
