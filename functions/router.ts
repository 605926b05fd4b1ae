import type { Hook, RouteConfig } from "@hono/zod-openapi";
import type { Handler } from "hono";
import { HonoBase } from "hono/hono-base";
import { ValidationError, type FieldIssue } from "../src/errors.ts";
import { PresplitLinearRouter } from "./linear-router.ts";
import type { AppEnv } from "./types.ts";

/**
 * A failed zod validation, in any part of a request, becomes the same 400
 * envelope listing each bad field.
 */
export const validationHook: Hook<unknown, AppEnv, string, void> = (result) => {
  if (!result.success) refuse(result);
};

/**
 * The 400 of a failed validation. A function of its own: a first request that validates (a cold
 * isolate's first write, most often) does not compile it (issue 14, point 6).
 */
function refuse(result: Extract<Parameters<typeof validationHook>[0], { success: false }>): never {
  const details: (FieldIssue & { in: string })[] = result.error.issues.flatMap(closestOption).map((issue) => ({
    in: result.target,
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
  const first = details[0];
  const where = first ? `${first.in}${first.path ? ` field '${first.path}'` : ""}` : "request";
  throw new ValidationError(`Invalid ${where}: ${first?.message ?? "bad value"}.`, details);
}

/** What the hook reads of a zod issue (a union's carries the issues of each of its options). */
interface Issue {
  code?: string;
  path: PropertyKey[];
  message: string;
  errors?: Issue[][];
}

/**
 * A union whose options all fail is one zod issue, "Invalid input", which says nothing of what is
 * wrong (`{"by":"x"}` for a score change). It is replaced by the issues of its closest option: one
 * of the value's type (an option of another type is farthest: `{"value":"x"}` in a batch of
 * observations is the item's bad field, not "expected number"), then one that knows the value's
 * own keys (an option without them is of another shape: a batch `{"values":[…]}` with three bad
 * items is not one observation missing its `value`, which two issues made closer; review 22), then
 * the fewest issues, then one without unknown keys, then the first (`{"by":"x"}`: "'by': expected
 * number, received string"), at the union's path, nested unions alike.
 */
function closestOption(issue: Issue): Issue[] {
  if (issue.code !== "invalid_union" || !issue.errors?.length) return [issue];
  // a batch of 1,000 items has at most a few thousand issues: far below an unknown key of its own
  const weight = (list: Issue[]) =>
    2 * list.length +
    (list.some((i) => i.code === "unrecognized_keys") ? 1 : 0) +
    (list.some((i) => i.code === "unrecognized_keys" && !i.path.length) ? 1e5 : 0) +
    (list.some((i) => i.code === "invalid_type" && !i.path.length) ? 1e6 : 0);
  let best: Issue[] | undefined;
  for (const option of issue.errors.map((list) => list.flatMap(closestOption)))
    if (!best || weight(option) < weight(best)) best = option;
  if (!best?.length) return [issue];
  return best.map((i) => ({ ...i, path: [...issue.path, ...i.path] }));
}

/** A route as `lazyRoute` (./lazy-route.ts) records it, in Hono's form, mounted by `mountRoutes`. */
export interface RecordedRoute {
  method: string;
  /** Hono's path syntax (`/:name`), relative to the mount base. */
  path: string;
  handler: Handler<AppEnv>;
  /** The route's full `createRoute` config, responses included, built on first call (for the document). */
  config(): RouteConfig;
}

/**
 * A feature's routes, in registration order. Not a Hono app of its own: the
 * app adds them at their mount base (`mountRoutes`), so a cold isolate builds
 * one Hono app and router, not one per feature plus the copies Hono's `route`
 * makes.
 */
export class Routes {
  readonly routes: RecordedRoute[] = [];
}

/** A feature's routes; each is added with `lazyRoute` (./lazy-route.ts), which validates with `validationHook`. */
export function createRouter(): Routes {
  return new Routes();
}

/**
 * The app: a plain Hono app, as every route is added by `mountRoutes` and validates with
 * `validationHook` itself (./lazy-route.ts). Not an OpenAPIHono, which would load zod and
 * @hono/zod-openapi with the app in every cold isolate (./zod.ts); the OpenAPI document has a
 * registry of its own (./openapi-document.ts).
 */
export function createAppRouter() {
  return new HonoBase<AppEnv>({
    // A LinearRouter: no matcher to compile on the first request (the default
    // RegExpRouter builds one over every route, ~5-10 ms of a cold isolate's
    // CPU); matching our ~70 routes linearly costs microseconds, with each
    // route's path taken apart once (./linear-router.ts).
    router: new PresplitLinearRouter(),
  });
}
