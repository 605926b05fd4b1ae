/**
 * Stands in for "zod" where @hono/zod-openapi imports its `z` in the Worker bundle
 * (dev/build-worker.ts `ALIASES`). @hono/zod-openapi uses `z` only to give every schema
 * `.openapi()` (extendZodWithOpenApi, ./zod-to-openapi.ts in the bundle, which reads
 * `z.ZodType`) and re-exports it; the app builds its schemas with ../zod.ts, which imports zod's
 * parts by name, so the bundle keeps only the parts the app reaches instead of all of zod.
 */
import { ZodType } from "zod/v4";

export const z = { ZodType };
