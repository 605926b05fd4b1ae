import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../router.ts";
import { ctxOf } from "../middleware/context.ts";
import { jsonResponse } from "../schemas.ts";

const Health = z
  .object({
    ok: z.boolean(),
    redis: z.object({ ok: z.boolean(), latencyMs: z.number() }),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  })
  .openapi("Health");

export const healthRoutes = createRouter().openapi(
  createRoute({
    method: "get",
    path: "/healthz",
    tags: ["Operations"],
    summary: "Liveness and Redis reachability (one PING)",
    responses: {
      200: jsonResponse(Health, "The Worker and Redis are up."),
      503: jsonResponse(Health, "Redis is unreachable."),
    },
  }),
  async (c) => {
    const started = performance.now();
    try {
      await ctxOf(c).redis.ping();
      const latencyMs = Math.round((performance.now() - started) * 10) / 10;
      return c.json({ ok: true, redis: { ok: true, latencyMs } }, 200);
    } catch (error) {
      console.error("healthz: redis unreachable", error);
      const latencyMs = Math.round((performance.now() - started) * 10) / 10;
      return c.json(
        { ok: false, redis: { ok: false, latencyMs }, error: { code: "storage_unavailable", message: "Redis is unreachable." } },
        503,
      );
    }
  },
);
