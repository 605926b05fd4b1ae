import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../types.ts";

/**
 * Feature routers and where they are mounted. Each feature adds its line.
 */
export const featureRoutes: [string, OpenAPIHono<AppEnv>][] = [];
