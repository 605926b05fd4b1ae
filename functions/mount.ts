import type { Hono } from "hono";
import { mergePath } from "hono/utils/url";
import { onFirstUse } from "./first-use.ts";
import type { Routes } from "./router.ts";
import type { Mount } from "./routes/index.ts";
import type { AppEnv } from "./types.ts";
// Loaded with the app, at startup, rather than by a cold isolate's first request (issue 14, point
// 6): what the first request of every route loads, whatever its feature (./lazy-route.ts with
// ./route-validators.ts, ./schemas.ts, and src/time.ts and src/validation.ts, which they import).
// As a chunk of its own it was ~1 ms of each first request (compiling and importing ~12 KB, in the
// free plan's 10 ms), now ~1.5 ms more of the Worker's start (its own limit; issue 14 asks ≤ 30 ms).
import "./schemas.ts";

/**
 * Adds a mount's routes to `app` at its base, in order, from its table (./routes/index.ts): each
 * route is matched as the router's own would be (same method, same path joined with
 * `mergePath`, same place among the app's routes), and its handler loads the router's module on
 * the first request that reaches any of its routes, then runs the route's own handler. So a cold
 * isolate evaluates no router module, and no Hono app per feature (what `app.route(base, router)`
 * did when each feature was a Hono app of its own, about 1 ms for our ten mounts).
 */
export function mountRoutes(app: Hono<AppEnv>, mount: Mount): void {
  const prefix = mergePath("/", mount.base);
  // A failed import is tried again by the next request; no request awaits another's (./first-use.ts).
  const routes = onFirstUse(async () => checked(mount, await mount.load()));
  mount.table.forEach(([method, path], i) => {
    // A route with a module of its own (`Mount.alone`) loads that one only: a router of that route alone.
    const own = mount.alone?.[i];
    const alone = own && onFirstUse(async () => checked({ ...mount, table: [[method, path]] }, await own()));
    app.on(method, mergePath(prefix, path), async (c, next) => {
      const route = alone ? (await alone()).routes[0] : (await routes()).routes[i];
      if (!route) throw new Error(`route ${i} of ${mount.base} is missing`);
      return route.handler(c, next);
    });
  });
}

/** `router`, if it records exactly the routes of the mount's table (a route added to a router must be added to its table). */
function checked(mount: Mount, router: Routes): Routes {
  const actual = router.routes.map((r) => `${r.method} ${r.path}`).join(", ");
  const listed = mount.table.map(([method, path]) => `${method} ${path}`).join(", ");
  if (actual !== listed)
    throw new Error(`the routes mounted at ${mount.base} are [${actual}], but its table lists [${listed}]`);
  return router;
}

let patterns: { method: string; path: RegExp }[] | undefined;

/**
 * The methods the app has a route for at `path` (from the mounts' tables, without loading a
 * router), with HEAD wherever GET is: a request that found no route is then a 405 with `Allow`
 * when the path exists for other methods, and a 404 only when no route has it (RFC 9110 §15.5.6).
 * The patterns are built on the first such request. `extra` are the app's own routes.
 */
export function allowedMethods(
  mounts: readonly Mount[],
  extra: readonly (readonly [string, string])[],
  path: string,
): string[] {
  patterns ??= [
    ...mounts.flatMap((mount) =>
      mount.table.map(([method, route]) => [method, mergePath(mergePath("/", mount.base), route)] as const),
    ),
    ...extra,
  ].map(([method, route]) => ({
    method,
    // `:name` is one segment; the router also takes a trailing slash
    path: new RegExp(
      `^${route
        .replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        .replace(/:[A-Za-z]+/g, "[^/]+")
        .replace(/\/$/, "")}/?$`,
    ),
  }));
  const methods = new Set(patterns.filter((p) => p.path.test(path)).map((p) => p.method));
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}
