import type { createMiddleware as HonoCreateMiddleware } from "hono/factory";

/**
 * Hono's `createMiddleware` (hono/factory), which returns its argument and only types it. Its
 * module imports the `Hono` class for `createFactory`, and with it Hono's default routers
 * (RegExpRouter, TrieRouter, SmartRouter: ~6 KB that every cold isolate compiled and no request
 * runs, as the app routes with a LinearRouter: ../router.ts); this one imports nothing.
 */
export const createMiddleware: typeof HonoCreateMiddleware = (middleware) => middleware;
