import type { OpenAPIHono, RouteConfig, RouteHandler } from "@hono/zod-openapi";
import type { Context, Handler, Next } from "hono";
import { mergePath } from "hono/utils/url";
import { PresplitLinearRouter } from "./linear-router.ts";
import { validationHook, type Routes } from "./router.ts";
import type { AppEnv } from "./types.ts";
import { onFirstUse } from "./first-use.ts";
import { validatorsOf } from "./route-validators.ts";
import { loadZod, ZodNotLoaded, zodParts } from "./zod.ts";

/**
 * Routes whose zod schemas are built on their first request (issue 14, point 6).
 *
 * Building every route's schemas and `createRoute` configs when the module loads
 * was most of a cold isolate's CPU (~50 ms of zod schema construction), yet a
 * request needs only its own route's, and only those it validates. So a route
 * is registered with its method and path at once (plain strings: matching and
 * the order of routes are as before); its spec, with the request schemas, is
 * built when a request first reaches it; its `responses` (a thunk in the spec)
 * only when the OpenAPI document is first built, which builds every route's.
 *
 * What a request builds is moreover *plain*: `.openapi(...)` returns its
 * schema unchanged while a route's request schemas are built for validation.
 * zod-to-openapi's `.openapi()` copies the schema and wraps eight of the
 * copy's methods to carry the metadata along (a refused counter increment
 * built 59 schemas, now 47: about 2 ms less CPU on a cold isolate's first
 * request), and validation reads no metadata. The document builds every spec
 * again with its metadata, so shared schemas (`once`) keep one value per mode.
 */

type Method = RouteConfig["method"];
type Responses = RouteConfig["responses"];
/** What `createRoute` takes besides the method and the path, with the responses as a thunk. */
type RouteSpec = Omit<RouteConfig, "method" | "path" | "responses"> & { responses: () => Responses };
/** The `createRoute` config a spec stands for (what `c.req.valid` and the handler's responses are typed from). */
type ConfigOf<M extends Method, P extends string, S extends RouteSpec> = Omit<S, "responses"> & {
  method: M;
  path: P;
  responses: ReturnType<S["responses"]>;
};
type Registry = OpenAPIHono<AppEnv>["openAPIRegistry"];

let builds = 0;
/** How many routes have built their specs (for requests, the document or both) in this isolate (tests prove the laziness with it). */
export function routeBuilds(): number {
  return builds;
}

/** True while a route's request schemas are built for validation only (see above). */
let plain = false;

/**
 * Loads zod (./zod.ts `loadZod`: it is not part of a cold isolate's start) and makes `.openapi()`
 * follow `plain`, once; before any schema is built, for a route's request or for the document.
 */
export const zodReady = onFirstUse(async () => {
  const { ZodType } = await loadZod();
  // Bound to each schema when zod constructs it, so only schemas built after this see the
  // switch: every schema of the app is built lazily, on a request or for the document. Two
  // requests may both get here first (./first-use.ts): the second finds it patched.
  const proto = ZodType.prototype as { openapi: ((...args: unknown[]) => unknown) & { plainAware?: true } };
  if (proto.openapi.plainAware) return;
  const openapi = proto.openapi;
  proto.openapi = Object.assign(
    function (this: unknown, ...args: unknown[]) {
      return plain ? this : openapi.apply(this, args);
    },
    { plainAware: true as const },
  );
});

/**
 * `build()`, with zod loaded first if it reaches a part of zod (`ZodNotLoaded`): a route whose
 * request parts are all prechecked builds without loading zod.
 */
async function withZodIfNeeded<T>(build: () => T): Promise<T> {
  try {
    return build();
  } catch (error) {
    if (!(error instanceof ZodNotLoaded)) throw error;
  }
  await zodReady();
  return build();
}

/** `build()` with `.openapi(...)` a no-op: the schemas validate exactly as the described ones. */
function plainly<T>(build: () => T): T {
  const outer = plain;
  plain = true;
  try {
    return build();
  } finally {
    plain = outer;
  }
}

/**
 * A value built on the first call and kept: shared schemas are built once, by
 * the first route that needs them; once plain for requests and once with their
 * metadata for the document, as the mode of the first call in each asks.
 */
export function once<T>(build: () => T): () => T {
  let described: { value: T } | undefined;
  let bare: { value: T } | undefined;
  return () => (plain ? (bare ??= { value: build() }) : (described ??= { value: build() })).value;
}

export { onFirstUse } from "./first-use.ts";

/** What a route's precheck decides for a request part: zod's verdict, or `undefined` to ask zod. */
export type Verdict =
  | { success: true; data: unknown }
  | { success: false; error: { issues: { path: (string | number)[]; message: string }[] } }
  | undefined;

/**
 * `schema()`, except that a request validates first with `precheck`, a plain function that gives
 * zod's verdict for the inputs it knows (a valid body, say, and the commonest refusals) and
 * `undefined` for any other, which `schema()`, built then, decides. Building a route's zod schemas
 * and running zod's parsers the first time cost a cold isolate's first request about 10 of its
 * 26 ms (a refused counter increment), nearly all of it once per isolate, whatever the schemas:
 * V8 compiles each zod function on its first call and zod sets up each schema class on its first
 * instance (building the same schemas again takes a tenth of that). Fewer schemas would hardly
 * help; a precheck that knows the request spares all of it. A precheck must answer exactly
 * as zod would: the same data (same keys, in the schema's order) or the same issues (path and
 * message, which is all the 400 envelope shows), in the same order; test/unit/prechecks.test.ts
 * compares them over many inputs. The OpenAPI document gets `schema()` itself.
 */
export function prechecked<T>(schema: () => T, precheck: (value: unknown) => Verdict): T {
  if (!plain) return schema();
  const zod = once(schema);
  // Built plain, as the rest of the route's request schemas (see above).
  const fallback = () => plainly(zod) as unknown as { safeParseAsync(value: unknown): Promise<unknown> };
  const safeParseAsync = async (value: unknown) => {
    const verdict = precheck(value);
    if (verdict) return verdict;
    await zodReady();
    return await fallback().safeParseAsync(value);
  };
  const unused = () => {
    throw new Error("a prechecked schema only validates requests");
  };
  // What @hono/zod-openapi's validator calls (`safeParseAsync`); the rest only so it takes this for a zod schema.
  return { safeParseAsync, parse: unused, safeParse: unused, parseAsync: unused } as unknown as T;
}

/**
 * `router.openapi(createRoute({ method, path, ...spec(), responses: spec().responses() }), handler)`,
 * except that `spec` runs on the route's first request and `responses` only for
 * the document. `c.req.valid(...)` and the handler's responses are typed from
 * `spec`'s return type as with `openapi`.
 */
// `const S`: the spec's literals are typed against RouteSpec as in a direct `createRoute({...})` call.
export function lazyRoute<const M extends Method, const P extends string, const S extends RouteSpec>(
  router: Routes,
  method: M,
  path: P,
  spec: () => S,
  handler: RouteHandler<ConfigOf<M, P, S>, AppEnv>,
): void {
  let built = false;
  const counted = () => {
    if (!built) builds++;
    built = true;
    return spec();
  };
  // The key order of `spec` is kept (the document lists an operation's fields in it).
  const config = once(() => {
    const described = counted();
    const { createRoute } = zodParts();
    return createRoute({ method, path, ...described, responses: described.responses() }) as RouteConfig;
  });

  // Validation reads only the method, path, middleware and request schemas.
  const chain = onFirstUse(() =>
    withZodIfNeeded(() => {
      const { middleware, request } = plainly(counted);
      return handlersOf({ method, path, middleware, request, responses: {} }, handler as unknown as Handler<AppEnv>);
    }),
  );
  router.routes.push({
    method: method.toUpperCase(),
    path: path.replaceAll(/\/{(.+?)}/g, "/:$1"),
    handler: async (c, next) => run(await chain(), c, next),
    config,
  });
}

/**
 * Adds `from`'s routes to `router`, after those it has: a route defined in a module of its own
 * (functions/routes/index.ts `Mount.alone`), at its place among its feature's routes. The same
 * route objects, so a route's spec is built once whichever router a request reached it by.
 */
export function includeRoutes(router: Routes, from: Routes): void {
  router.routes.push(...from.routes);
}

/**
 * The handlers `OpenAPIHono.openapi` would have registered for the route, in
 * order: its middleware, the zod validator of each request part (with the 415
 * media-type gate), then the handler, with our 400 envelope as the validation
 * hook. Built for the request parts our routes have (./route-validators.ts `validatorsOf`), so a
 * route's first request compiles and runs no Hono app; any other route is
 * taken from a throwaway OpenAPIHono, exactly the library's.
 */
export function handlersOf(route: RouteConfig, handler: Handler<AppEnv>): Handler<AppEnv>[] {
  const validators = validatorsOf(route.request);
  const middleware = route.middleware ?? [];
  if (validators) return [...(Array.isArray(middleware) ? middleware : [middleware]), ...validators, handler];
  const { OpenAPIHono } = zodParts();
  const scratch = new OpenAPIHono<AppEnv>({ router: new PresplitLinearRouter(), defaultHook: validationHook });
  (scratch.openapi as (route: RouteConfig, handler: Handler<AppEnv>) => unknown)(route, handler);
  return scratch.routes.map((r) => r.handler as Handler<AppEnv>);
}

/**
 * Runs `chain` as Hono's compose runs a route's handlers: a handler that
 * returns a Response sets `c.res` unless one is already final; `next` of the
 * last continues with whatever the app matched after the route. A thrown error
 * leaves through the outer handler, where Hono's compose turns it into the
 * app's error response as it did for the inner handler.
 */
async function run(chain: Handler<AppEnv>[], c: Context<AppEnv>, next: Next): Promise<void> {
  let index = -1;
  const dispatch = async (i: number): Promise<void> => {
    if (i <= index) throw new Error("next() called multiple times");
    index = i;
    const handler = chain[i];
    if (!handler) return next();
    const res: unknown = await handler(c, () => dispatch(i + 1));
    if (res && c.finalized === false) c.res = res as Response;
  };
  await dispatch(0);
}

/**
 * Registers every lazy route of `router`, mounted at `base`, in `registry`, as
 * `OpenAPIHono.route` registers a sub-router's routes (the mount base joined with
 * `mergePath`, `:param` as `{param}`; without `middleware`, skipping `hide`).
 * Builds the routes' configs that no request has built yet.
 */
export function registerRoutes(registry: Registry, base: string, router: Routes): void {
  const basePath = base.replaceAll(/:([^/]+)/g, "{$1}");
  for (const lazy of router.routes) {
    const { middleware: _middleware, hide, ...route } = lazy.config();
    if (hide) continue;
    registry.registerPath({ ...route, path: mergePath(basePath, "/", route.path) });
  }
}
