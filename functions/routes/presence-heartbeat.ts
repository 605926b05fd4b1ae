import * as z from "../zod.ts";
import { heartbeat } from "../../src/presence/presence.ts";
import { ctxOf, markReplay, queueIfAsync } from "../middleware/context.ts";
import { lazyRoute, once, prechecked, type Verdict } from "../lazy-route.ts";
import { createRouter } from "../router.ts";
import {
  isPlainObject,
  jsonBody,
  jsonResponse,
  MAX_BATCH_ITEMS,
  Member,
  memberPrecheck,
  nameParamsChecked,
  queuedResponse,
  writeErrorResponses,
} from "../schemas.ts";

/**
 * The heartbeat's route (POST /v1/presence/{room}/heartbeats) and its schemas, in a module of its
 * own: a cold isolate's first heartbeat loads this and the library's heartbeat
 * (src/presence/presence.ts), not the other presence routes, their schemas nor the reads' code
 * (functions/routes/index.ts `Mount.alone`; ./presence.ts includes the route at its place).
 */

const tags = ["Presence"];

/** The room path parameter, prechecked (../lazy-route.ts). */
const roomParamsChecked = () => nameParamsChecked("room");
/** The presence timeout of the deployment's config, as the library takes it. */
export const timeoutOf = (c: { get(key: "config"): { presenceTimeoutSeconds: number } }) => ({
  timeoutSeconds: c.get("config").presenceTimeoutSeconds,
});

/**
 * `{"id"}` or `{"ids":[...]}` of plain strings (not `{"ids":[{"id"}]}` as
 * batchOf would build), so the contract's shape needs its own schema.
 */
export const HeartbeatBody = once(() =>
  z
    .object({
      id: Member().optional(),
      ids: z
        .array(Member())
        .min(1)
        .max(MAX_BATCH_ITEMS)
        .optional()
        .openapi({ description: `1..${MAX_BATCH_ITEMS} ids` }),
    })
    .strict()
    .superRefine((body, ctx) => {
      if ((body.id === undefined) === (body.ids === undefined))
        ctx.addIssue({ code: "custom", path: [], message: "send exactly one of 'id' or 'ids'" });
    })
    .openapi("PresenceHeartbeat", { example: { ids: ["3f1c9a6e-4b7d-4f0a-9a55-0c1d2e3f4a5b", "user-42"] } }),
);

/**
 * The precheck (../lazy-route.ts) of HeartbeatBody: `{"id"}` or `{"ids":[1..1000 strings]}` is
 * decided without zod (valid ids, and bad ones with their issues, as the members' own refinement
 * reports them); any other body, zod decides.
 */
export function heartbeatPrecheck(body: unknown): Verdict {
  if (!isPlainObject(body)) return undefined;
  const keys = Object.keys(body);
  if (keys.length !== 1) return undefined;
  const issues: { path: (string | number)[]; message: string }[] = [];
  let data: Record<string, unknown>;
  if (keys[0] === "id") {
    const id = memberPrecheck(body.id, ["id"], issues);
    if (id === undefined) return undefined;
    data = { id };
  } else if (keys[0] === "ids") {
    const list = body.ids;
    if (!Array.isArray(list) || list.length < 1 || list.length > MAX_BATCH_ITEMS) return undefined;
    const ids: string[] = [];
    for (let i = 0; i < list.length; i++) {
      const id = memberPrecheck(list[i], ["ids", i], issues);
      if (id === undefined) return undefined;
      ids.push(id);
    }
    data = { ids };
  } else return undefined;
  return issues.length > 0 ? { success: false, error: { issues } } : { success: true, data };
}

export const HeartbeatResult = once(() =>
  z
    .object({
      online: z.number().int().openapi({ description: "ids online in the room right after this heartbeat" }),
      new: z.number().int().openapi({ description: "ids of this request not seen in the room within the id horizon" }),
    })
    .openapi("PresenceHeartbeatResult"),
);

export const heartbeatRoutes = createRouter();

lazyRoute(
  heartbeatRoutes,
  "post",
  "/{room}/heartbeats",
  () => ({
    tags,
    summary: "Mark one id or up to 1,000 ids online now; returns the online count",
    request: { params: roomParamsChecked(), ...jsonBody(prechecked(HeartbeatBody, heartbeatPrecheck)) },
    responses: () => ({
      200: jsonResponse(HeartbeatResult(), "Recorded."),
      202: queuedResponse(),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const body = c.req.valid("json");
    const ids = body.ids ?? (body.id === undefined ? [] : [body.id]);
    const queued = await queueIfAsync(c, "presence", c.req.valid("param").room, ids);
    if (queued) return c.json(queued, 202);
    const { replayed, ...value } = await heartbeat(ctxOf(c), c.req.valid("param").room, ids, {
      ...timeoutOf(c),
      idempotency: c.get("idempotency"),
    });
    markReplay(c, replayed);
    return c.json(value, 200);
  },
);
