/**
 * The parts of zod the app's schemas are built with, imported by name: `import * as z from
 * "../zod.ts"` reads as zod's `z`, but a bundler can leave out what no one uses (zod's own `z`
 * is one object holding all of zod, so @hono/zod-openapi's `z` kept all of it in the Worker:
 * 129 KB of minified code, 82 KB by name; issue 14, point 6). In the Worker bundle,
 * @hono/zod-openapi's `z` is then only what it needs (functions/build/zod-namespace.ts).
 *
 * Needs another part of zod? Add it here. Imported from "zod/v4" (the same modules as "zod"),
 * as the Worker's build replaces the import "zod" (dev/build-worker.ts).
 */
export {
  any,
  array,
  boolean,
  coerce,
  enum,
  NEVER,
  number,
  object,
  record,
  string,
  union,
  ZodArray,
  ZodObject,
  ZodType,
} from "zod/v4";
export type { infer } from "zod/v4";
