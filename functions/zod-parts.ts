/**
 * The parts of zod the app's schemas are built with, and the parts of @hono/zod-openapi the routes
 * use, loaded together on first use through ./zod.ts (`loadZod`), never at start. Importing
 * @hono/zod-openapi gives every zod schema `.openapi()` (extendZodWithOpenApi), so it comes first.
 *
 * Needs another part of zod? Add it here and to ./zod.ts. Imported from "zod/v4" (the same modules
 * as "zod"), as the Worker's build replaces the import "zod" (dev/build-worker.ts).
 */
export { createRoute, OpenAPIHono } from "@hono/zod-openapi";
export {
  any,
  array,
  boolean,
  coerce,
  enum,
  NEVER,
  number,
  object,
  preprocess,
  record,
  string,
  union,
  ZodType,
} from "zod/v4";
