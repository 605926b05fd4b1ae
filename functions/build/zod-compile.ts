/**
 * Stands in for zod's `v4/core/compile.js` and `v4/classic/from-json-schema.js` in the Worker
 * bundle (dev/build-worker.ts `ALIASES`). They are reachable only through the `z` namespace that
 * @hono/zod-openapi hands to zod-to-openapi (so no bundler can shake them), and the Worker never
 * calls them: `z.compile()` builds validators with `new Function` (which Workers refuse anyway)
 * and `z.fromJSONSchema()` turns JSON Schema into zod. Together ~12 KiB of gzip. Tests and the
 * library import zod unchanged; `npm run bundle-size` checks that only zod imports these paths.
 */
const absent = (): never => {
  throw new Error(
    "zod's compile() and fromJSONSchema() are left out of the Worker bundle (functions/build/zod-compile.ts)",
  );
};
export const INVALID = Symbol.for("zod.compile.invalid");
export class ZodCompileAsyncError extends Error {}
export class ZodCompileUnsupportedError extends Error {}
export const compile = absent;
export const withParser = absent;
export const compileFn = absent;
export const fromJSONSchema = absent;
