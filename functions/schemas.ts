import * as z from "./zod.ts";
import { MAX_BATCH, MAX_INCREMENT, NAME_PATTERN, NAME_RULE, memberProblem, textProblem } from "../src/validation.ts";
import { parseAt, parseWindow } from "../src/time.ts";
import { once, prechecked, type Verdict } from "./lazy-route.ts";

/**
 * Schemas shared by every feature's routes. One definition serves both the
 * validation and the OpenAPI document. Each is a memoised factory, built by the
 * first route that needs it (routes build their schemas on first use, see
 * ./lazy-route.ts), then shared as one object as before.
 */

type Issues = { path: (string | number)[]; message: string }[];

/** A path name: stream, counter, histogram, room, board, player. */
export const Name = once(() => z.string().regex(NAME_PATTERN, NAME_RULE).openapi({ example: "searches" }));

/** Path parameter schema `{ [param]: Name }`. */
export function nameParams<K extends string>(...names: K[]) {
  return z.object(
    Object.fromEntries(names.map((n) => [n, Name().openapi({ param: { name: n, in: "path" } })])) as Record<
      K,
      ReturnType<typeof Name>
    >,
  );
}

/**
 * The precheck (./lazy-route.ts) of `nameParams(...names)`, decided without zod (Hono passes each
 * parameter as a string): the names, or zod's issue (`NAME_RULE`) for each that is not one.
 */
export function nameParamsPrecheck(...names: string[]) {
  return (value: unknown): Verdict => {
    const params = value as Record<string, unknown>;
    const data: Record<string, string> = {};
    const issues: Issues = [];
    for (const name of names) {
      const v = params[name];
      if (typeof v !== "string") return undefined;
      if (NAME_PATTERN.test(v)) data[name] = v;
      else issues.push({ path: [name], message: NAME_RULE });
    }
    return issues.length > 0 ? { success: false, error: { issues } } : { success: true, data };
  };
}

/** `nameParams(...names)`, prechecked. */
export function nameParamsChecked<K extends string>(...names: K[]) {
  return prechecked(() => nameParams(...names), nameParamsPrecheck(...names));
}

/** A member or id: 1..256 UTF-8 bytes, no control characters, not "." or ".." (a path segment). */
export const Member = once(() =>
  z
    .string()
    .superRefine((value, ctx) => {
      const problem = memberProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .openapi({ example: "555-0100", description: "1..256 UTF-8 bytes, no control characters, not '.' or '..'" }),
);

/** Free text shown, never a path segment (a player's display name): as `Member`, "." and ".." allowed. */
export const DisplayText = once(() =>
  z
    .string()
    .superRefine((value, ctx) => {
      const problem = textProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .openapi({ example: "Alice", description: "1..256 UTF-8 bytes, no control characters" }),
);

/** A finite increment within ±1e12 (negative allowed). */
export const Increment = once(() =>
  z.number().finite().min(-MAX_INCREMENT).max(MAX_INCREMENT).openapi({ description: "finite, within ±1e12" }),
);

/** A positive count within 1e12. */
export const Count = once(() =>
  z.number().finite().positive().max(MAX_INCREMENT).openapi({ description: "finite, 0 < count ≤ 1e12" }),
);

/** A finite score (leaderboards, histogram values). */
export const Score = once(() => z.number().finite().min(-1e15).max(1e15));

/** Epoch milliseconds or an ISO-8601 string; parsed to epoch ms. */
export const At = once(() =>
  z
    .union([z.number().int(), z.string()])
    .transform((value, ctx) => {
      const ms = parseAt(value);
      if (ms === null) {
        ctx.addIssue({ code: "custom", message: "must be epoch milliseconds or an ISO-8601 timestamp" });
        return z.NEVER;
      }
      return ms;
    })
    .openapi({ type: "string", description: "epoch milliseconds or ISO-8601", example: "2026-11-22T15:04:05Z" }),
);

/** What `Window()` says of a value `parseWindow` refuses. */
export const WINDOW_RULE = "must be 1h..168h or 1d..7d";

/** `window` query value: `1h`..`168h` or `1d`..`7d`, parsed to hours. */
export const Window = once(() =>
  z
    .string()
    .default("24h")
    .transform((value, ctx) => {
      const hours = parseWindow(value);
      if (hours === null) {
        ctx.addIssue({ code: "custom", message: WINDOW_RULE });
        return z.NEVER;
      }
      return hours;
    })
    .openapi({ type: "string", example: "24h" }),
);

/**
 * An integer query value within [min, max], in plain decimal digits (a leading '-' only when `min`
 * is negative). Not Number(): it reads `0x10`, `0b101`, `0o7` and " 10 " as numbers too, so a typo
 * such as `page=0x1` read another page instead of a 400 (review 10).
 */
export function intText(min: number, max: number) {
  const pattern = min < 0 ? /^-?[0-9]+$/ : /^[0-9]+$/;
  return (
    z
      .string()
      // the message names the range: `-1` for a parameter from 0 is refused here, not by .min()
      .regex(pattern, { message: intRule(min, max) })
      .transform(Number)
      .pipe(z.number().int().min(min).max(max))
  );
}

/** What `intText(min, max)` says of text that is not decimal digits. */
export function intRule(min: number, max: number): string {
  return `must be an integer from ${min} to ${max} in decimal digits`;
}

/** An integer query parameter within [min, max] (`intText`). */
export function intQuery(min: number, max: number, fallback: number) {
  // the bounds stated too: the `type` override drops what zod would derive (review 9: a client
  // generated from /openapi.json could not know `limit=101` is a 400)
  return intText(min, max)
    .default(fallback)
    .openapi({ type: "integer", minimum: min, maximum: max, default: fallback, example: fallback });
}

/**
 * A write body that is one item or `{ [listKey]: [...] }` of 1..1000 items.
 * `normalizeBatch` turns either into a list.
 */
export function batchOf<T extends z.ZodObject, K extends string>(item: T, listKey: K) {
  // Items are strict too: a typo such as "cuont" inside a batch must be a 400, not a silent default.
  const list = z
    .object({ [listKey]: z.array(item.strict()).min(1).max(MAX_BATCH) } as Record<K, z.ZodArray<T>>)
    .strict();
  return z.union([item.strict(), list]);
}

/** A JSON object that is not an array (what a zod object takes). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The precheck (./lazy-route.ts) of `batchOf(item, listKey)`, from `item`'s: what `item` gives
 * for one item, as zod would (its value, or issues that do not abort the parse, such as a
 * refinement's), or `undefined` to ask zod. zod's union of the item and the list then picks the
 * only option whose parse did not abort: the list when the body's only key is `listKey`, else the
 * item (the other option fails with a missing key). So the issues are the item's, prefixed with
 * `listKey` and its index. A list of the wrong length, or an item the precheck does not know,
 * goes to zod.
 */
export function batchPrecheck<K extends string>(
  item: (value: unknown, path: (string | number)[], issues: Issues) => unknown,
  listKey: K,
) {
  return (body: unknown): Verdict => {
    if (!isPlainObject(body)) return undefined;
    const issues: Issues = [];
    let data: unknown;
    if (listKey in body) {
      const list = body[listKey];
      if (Object.keys(body).length !== 1 || !Array.isArray(list)) return undefined;
      if (list.length < 1 || list.length > MAX_BATCH) return undefined;
      const items: unknown[] = [];
      for (let i = 0; i < list.length; i++) {
        const value = item(list[i], [listKey, i], issues);
        if (value === undefined) return undefined;
        items.push(value);
      }
      data = { [listKey]: items };
    } else {
      data = item(body, [], issues);
      if (data === undefined) return undefined;
    }
    return issues.length > 0 ? { success: false, error: { issues } } : { success: true, data };
  };
}

/** The precheck of `Member()` at `path`: the member (adding its problem to `issues`), or `undefined` if not a string. */
export function memberPrecheck(value: unknown, path: (string | number)[], issues: Issues): string | undefined {
  if (typeof value !== "string") return undefined;
  const problem = memberProblem(value);
  if (problem) issues.push({ path, message: problem });
  return value;
}

export function normalizeBatch<T, K extends string>(body: T | Record<K, T[]>, listKey: K): T[] {
  const list = (body as Record<K, T[]>)[listKey];
  return Array.isArray(list) ? list : [body as T];
}

export const ErrorBody = once(() =>
  z
    .object({
      error: z.object({
        code: z.string().openapi({ example: "invalid_request" }),
        message: z.string(),
        details: z.array(z.object({ in: z.string().optional(), path: z.string(), message: z.string() })).optional(),
      }),
    })
    .openapi("Error"),
);

const errorResponse = (description: string) => ({
  content: { "application/json": { schema: ErrorBody() } },
  description,
});

/** Error responses every authenticated endpoint may give. */
export const errorResponses = once(
  () =>
    ({
      400: errorResponse("Invalid request; `details` lists each bad field. Nothing was written."),
      401: errorResponse("Missing or unknown API key."),
      403: errorResponse("The API key lacks the scope this endpoint needs."),
      429: errorResponse("Over RATE_LIMIT_PER_10S requests for this API key; `Retry-After` says when to retry."),
      503: errorResponse("Redis is unreachable; nothing was written."),
    }) as const,
);

export const writeErrorResponses = once(
  () =>
    ({
      ...errorResponses(),
      409: errorResponse("The Idempotency-Key was used before for a different request."),
      413: errorResponse("Body over 1 MiB."),
      415: errorResponse("Body is not JSON."),
    }) as const,
);

export const notFoundResponse = once(() => ({ 404: errorResponse("Not found.") }) as const);

/** A JSON request body declaration. */
export function jsonBody<T extends z.ZodType>(schema: T, description?: string) {
  return {
    body: { content: { "application/json": { schema } }, required: true, ...(description ? { description } : {}) },
  };
}

/** A JSON 200 (or other) response declaration. */
export function jsonResponse<T extends z.ZodType>(schema: T, description: string) {
  return { content: { "application/json": { schema } }, description };
}

export const MAX_BATCH_ITEMS = MAX_BATCH;

/** Body of a 202: how many items were queued, and the request's id (also in X-Request-Id). */
export const QueuedBody = once(() =>
  z
    .object({
      queued: z.number().int().openapi({ description: "items (events, increments, ids) queued" }),
      requestId: z.string(),
    })
    .openapi("Queued"),
);

/** The 202 a write route adds to its responses (`202: queuedResponse()`); built on first use like the routes' schemas. */
export const queuedResponse = once(() =>
  jsonResponse(
    QueuedBody(),
    "Accepted with `Prefer: respond-async` (only when the deployment has a queue): validated like the synchronous call, then queued; the consumer applies it exactly once within seconds. `Preference-Applied: respond-async`.",
  ),
);

/** What a queued write answers (`QueuedBody`). */
export type QueuedBody = z.infer<ReturnType<typeof QueuedBody>>;
