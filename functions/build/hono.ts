/**
 * Stands in for "hono" where @hono/zod-openapi imports `Hono` (the base of its `OpenAPIHono`) in
 * the Worker bundle (dev/build-worker.ts `ALIASES`). Hono's `Hono` is `HonoBase` plus a default
 * router, `SmartRouter` over `RegExpRouter` and `TrieRouter`, which no bundler can leave out (the
 * constructor names them) although no `OpenAPIHono` of the bundle uses it: each is given our own
 * router (../lazy-route.ts `handlersOf`), or, in `OpenAPIHono.basePath`, given the clone's at once;
 * the one that is not (../openapi-document.ts) is aliased away too. ~6 KB of minified code, 2.6 KiB
 * of gzip, in zod's chunk (which the first request a precheck does not decide loads: ../zod.ts).
 * Tests and the library import hono unchanged.
 */
export { HonoBase as Hono } from "hono/hono-base";
