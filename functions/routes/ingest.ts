import * as z from "../zod.ts";
import * as ingest from "../../src/ingest/index.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf } from "../middleware/context.ts";
import type { IngestBindings } from "../queue.ts";
import { lazyRoute, once } from "../lazy-route.ts";
import { createRouter } from "../router.ts";
import { errorResponses, jsonResponse } from "../schemas.ts";

const tags = ["Ingest"];

const Lag = once(() => ({
  oldestAgeMs: z.number().int().openapi({
    description:
      "age of the oldest message the consumer saw in the last 2 minutes, when it saw it (its lag); 0 when it saw none",
  }),
  lastBatchAt: z.number().int().nullable().openapi({
    description: "when the consumer last finished a batch (epoch ms); null when not within the last hour or so",
  }),
  queue: z
    .boolean()
    .openapi({ description: "this deployment has the INGEST_QUEUE binding (Prefer: respond-async is honoured)" }),
}));

const Status = once(() =>
  z
    .object({
      ...Lag(),
      applied: z.number().int().openapi({ description: "messages applied in the last hour" }),
      retried: z
        .number()
        .int()
        .openapi({ description: "messages handed back to the queue in the last hour (storage errors)" }),
      deadLettered: z
        .number()
        .int()
        .openapi({ description: "messages sent to the dead-letter queue in the last hour (they can never apply)" }),
      events: z.number().int().openapi({ description: "items (events, increments, ids) applied in the last hour" }),
      duplicates: z.number().int().openapi({
        description: "messages acked as already applied in the last hour (redeliveries, repeated Idempotency-Keys)",
      }),
    })
    .openapi("IngestStatus"),
);

export const ingestRoutes = createRouter();

lazyRoute(
  ingestRoutes,
  "get",
  "/status",
  () => ({
    tags,
    summary: "Queued ingest: lag and messages applied, retried and dead-lettered in the last hour (admin)",
    description: "Kept by the queue consumer in per-minute counters (one script, 3 commands).",
    middleware: [requireScope("admin")] as const,
    responses: () => ({ 200: jsonResponse(Status(), "The consumer's figures."), ...errorResponses() }),
  }),
  async (c) => {
    const status = await ingest.status(ctxOf(c));
    return c.json({ ...status, queue: Boolean((c.env as unknown as IngestBindings).INGEST_QUEUE) }, 200);
  },
);

lazyRoute(
  ingestRoutes,
  "get",
  "/lag",
  () => ({
    tags,
    summary: "Queued ingest lag only (read keys: the dashboard's indicator)",
    responses: () => ({
      200: jsonResponse(z.object(Lag()).openapi("IngestLag"), "The consumer's lag."),
      ...errorResponses(),
    }),
  }),
  async (c) => {
    const { oldestAgeMs, lastBatchAt } = await ingest.status(ctxOf(c));
    return c.json({ oldestAgeMs, lastBatchAt, queue: Boolean((c.env as unknown as IngestBindings).INGEST_QUEUE) }, 200);
  },
);
