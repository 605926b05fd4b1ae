/**
 * Stands in for zod's `v4/core/to-json-schema.js` in the Worker bundle (dev/build-worker.ts `ALIASES`),
 * with ./zod-json-schema-processors.ts for `json-schema-processors.js`: zod's JSON Schema output
 * (`z.toJSONSchema()`, `schema.toJSONSchema()`, the standard schema's `jsonSchema`). Every zod
 * schema type refers to its processor and the `z` namespace re-exports them, so no bundler can
 * shake them; yet the Worker never asks zod for JSON Schema (zod-to-openapi, which the tests use
 * to build the OpenAPI document, reads the schemas itself, and the bundle serves the document
 * prebuilt). ~19 KiB of minified code V8 would parse on every cold start.
 * Tests and the library import zod unchanged; `npm run bundle-size` checks that only zod imports
 * these paths.
 */
const absent = (): never => {
  throw new Error("zod's toJSONSchema() is left out of the Worker bundle (functions/build/zod-json-schema.ts)");
};
export const initializeContext = absent;
export const handleUnrepresentable = absent;
export const processSchema = absent;
export { processSchema as process };
export const extractDefs = absent;
export const finalize = absent;
// Called when a schema's `~standard` is first read: the methods exist, and throw only if called.
export const createToJSONSchemaMethod = (): typeof absent => absent;
export const createStandardJSONSchemaMethod = (): typeof absent => absent;
