import * as z from "../zod.ts";
import type { Context } from "hono";
import * as webhooks from "../../src/webhooks/index.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { lazyRoute, once, prechecked } from "../lazy-route.ts";
import { fieldsPrecheck, intField } from "../prechecks.ts";
import { createRouter } from "../router.ts";
import {
  Name,
  errorResponses,
  intQuery,
  jsonBody,
  jsonResponse,
  nameParamsChecked,
  notFoundResponse,
  writeErrorResponses,
} from "../schemas.ts";
import type { AppEnv } from "../types.ts";

const tags = ["Webhooks"];

/**
 * Shapes only: the rules (https, known events, filters, secret length, limits) are the library's,
 * with the same 400 envelope listing every bad field. The bounds of `n` and `threshold` are stated
 * for /openapi.json only (review 10: a client built from it could not know them), not enforced here.
 */
const WebhookBody = once(() =>
  z
    .object({
      url: z.string().openapi({
        description: "https:// URL that receives POSTs (http:// on localhost only with WEBHOOKS_ALLOW_LOCAL_HTTP=true)",
        example: "https://example.com/hooks/edgestats",
      }),
      events: z.array(z.string()).openapi({
        description: `1..${webhooks.EVENT_TYPES.length} of ${webhooks.EVENT_TYPES.join(", ")}`,
        example: ["trending.entered", "trending.left"],
      }),
      filter: z
        .object({ stream: Name().optional(), room: Name().optional(), board: Name().optional() })
        .strict()
        .optional()
        .openapi({
          description:
            "Exactly one of stream (trending events; required by entered/left), room (presence.peak; required) or board (leaderboard.leader)",
        }),
      n: z
        .number()
        .int()
        .optional()
        .openapi({
          minimum: 1,
          maximum: webhooks.MAX_TOP_N,
          description: `top-N compared by trending.entered/left, 1..${webhooks.MAX_TOP_N}`,
          example: 10,
        }),
      threshold: z.number().optional().openapi({
        minimum: 0,
        maximum: webhooks.MAX_RISING_THRESHOLD,
        description: "least trending.rising score sent, 0..1e6 (only with trending.rising)",
        example: 3,
      }),
      secret: z.string().openapi({
        description: `${webhooks.MIN_SECRET_LENGTH}..256 characters; signs direct deliveries (Edgestats-Signature). Never returned.`,
      }),
    })
    .strict()
    .openapi("WebhookSettings"),
);

const Webhook = once(() =>
  z
    .object({
      name: z.string(),
      url: z.string(),
      events: z.array(z.string()),
      filter: z.record(z.string(), z.string()).nullable(),
      n: z.number().int(),
      threshold: z.number().nullable(),
      createdAt: z.number().int(),
      updatedAt: z.number().int(),
    })
    .openapi("Webhook"),
);

const Delivery = once(() =>
  z
    .object({
      delivery: z.string(),
      event: z.string().openapi({ description: "the event's id (also in its body)" }),
      type: z.string(),
      attempt: z.number().int(),
      at: z.number().int().openapi({ description: "when this attempt was made (epoch ms)" }),
      via: z.enum(["direct", "qstash"]),
      outcome: z.enum(["delivered", "published", "retrying", "failed"]).openapi({
        description:
          "delivered: the receiver answered 2xx; published: QStash accepted it (it delivers and retries); retrying: due again at retryAt; failed: given up",
      }),
      status: z.number().int().nullable(),
      error: z.string().nullable(),
      messageId: z.string().nullable(),
      retryAt: z.number().int().optional(),
    })
    .openapi("WebhookDelivery"),
);

/**
 * The path parameter, and the deliveries' query, prechecked (../lazy-route.ts, ../prechecks.ts):
 * a webhook's delete, test or log loads no zod, nor do their usual refusals. The settings' body
 * (an admin's rare PUT) is zod's.
 */
const params = () => nameParamsChecked("name");
export const DeliveriesQuery = once(() =>
  z.object({ limit: intQuery(1, webhooks.DELIVERY_LOG_SIZE, webhooks.DELIVERY_LOG_SIZE) }),
);
export const deliveriesQueryPrecheck = fieldsPrecheck({
  limit: intField(1, webhooks.DELIVERY_LOG_SIZE, webhooks.DELIVERY_LOG_SIZE),
});

/** Runs `work` after the response (waitUntil); where there is no execution context (tests), before it. */
async function afterResponse(c: Context<AppEnv>, work: Promise<unknown>): Promise<void> {
  let waitUntil: ((promise: Promise<unknown>) => void) | undefined;
  try {
    const ctx = c.executionCtx;
    waitUntil = (promise) => ctx.waitUntil(promise);
  } catch {
    waitUntil = undefined;
  }
  if (waitUntil) waitUntil(work);
  else await work;
}

export const webhooksRoutes = createRouter();

lazyRoute(
  webhooksRoutes,
  "get",
  "/",
  () => ({
    tags,
    summary: "Every webhook, without secrets (admin)",
    middleware: [requireScope("admin")] as const,
    responses: () => ({
      200: jsonResponse(z.object({ webhooks: z.array(Webhook()) }).openapi("Webhooks"), "The webhooks, by name."),
      ...errorResponses(),
    }),
  }),
  async (c) => c.json(await webhooks.list(ctxOf(c)), 200),
);

lazyRoute(
  webhooksRoutes,
  "put",
  "/{name}",
  () => ({
    tags,
    summary: "Create a webhook or replace its settings (admin)",
    description:
      'At most 20 webhooks. Events are POSTed as `{"id","type","at","data"}`, at least once (`id` is stable: deduplicate on it); ' +
      "`at` and the times in `data` (`hour`, `peakAt`) are epoch milliseconds; " +
      'directly with `Edgestats-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, or through QStash when QSTASH_TOKEN is set.',
    middleware: [requireScope("admin")] as const,
    request: { params: params(), ...jsonBody(WebhookBody()) },
    responses: () => ({
      200: jsonResponse(z.object({ webhook: Webhook(), created: z.boolean() }), "Replaced."),
      201: jsonResponse(z.object({ webhook: Webhook(), created: z.boolean() }), "Created."),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const body = c.req.valid("json") as webhooks.WebhookInput;
    const { webhook, created, replayed } = await webhooks.put(
      ctxOf(c),
      c.req.valid("param").name,
      body,
      webhooks.settingsOf(c.get("config")),
      c.get("idempotency"),
    );
    markReplay(c, replayed);
    return c.json({ webhook, created }, created ? 201 : 200);
  },
);

lazyRoute(
  webhooksRoutes,
  "delete",
  "/{name}",
  () => ({
    tags,
    summary: "Delete a webhook, its delivery log and its detection state (admin)",
    middleware: [requireScope("admin")] as const,
    request: { params: params() },
    responses: () => ({
      200: jsonResponse(z.object({ deleted: z.boolean() }), "Deleted (`deleted: false` when there was none)."),
      ...errorResponses(),
    }),
  }),
  async (c) => {
    const { deleted } = await webhooks.remove(ctxOf(c), c.req.valid("param").name);
    return c.json({ deleted }, 200);
  },
);

lazyRoute(
  webhooksRoutes,
  "post",
  "/{name}/test",
  () => ({
    tags,
    summary: "Send a `webhook.test` event to the webhook now (admin)",
    description:
      "Answers 202 once the event is queued; the delivery runs after the response and, if it fails, is retried by the minute job. See `/deliveries`. When the delivery queue is full (10,000 deliveries waiting) the event is not queued: a 409 `queue_full`, nothing written; retry after the minute job has sent some.",
    middleware: [requireScope("admin")] as const,
    request: { params: params() },
    responses: () => ({
      202: jsonResponse(z.object({ id: z.string() }), "Queued; being delivered."),
      ...writeErrorResponses(),
      409: {
        ...writeErrorResponses()[409],
        description:
          "The Idempotency-Key was used before for a different request, or (`queue_full`) the delivery queue is full: nothing was queued.",
      },
      ...notFoundResponse(),
    }),
  }),
  async (c) => {
    const ctx = ctxOf(c);
    const { id, send, replayed } = await webhooks.test(
      ctx,
      webhooks.settingsOf(c.get("config")),
      c.req.valid("param").name,
      c.get("idempotency"),
    );
    markReplay(c, replayed);
    // a failure here leaves the delivery queued for the minute job; the log says what happened
    await afterResponse(
      c,
      send().catch((error: unknown) => console.error(`webhook test delivery failed: ${String(error)}`)),
    );
    return c.json({ id }, 202);
  },
);

lazyRoute(
  webhooksRoutes,
  "get",
  "/{name}/deliveries",
  () => ({
    tags,
    summary: "The webhook's latest delivery attempts, newest first (admin)",
    middleware: [requireScope("admin")] as const,
    request: {
      params: params(),
      query: prechecked(DeliveriesQuery, deliveriesQueryPrecheck),
    },
    responses: () => ({
      200: jsonResponse(z.object({ deliveries: z.array(Delivery()) }).openapi("WebhookDeliveries"), "The log."),
      ...errorResponses(),
      ...notFoundResponse(),
    }),
  }),
  async (c) =>
    c.json(await webhooks.deliveries(ctxOf(c), c.req.valid("param").name, { limit: c.req.valid("query").limit }), 200),
);
