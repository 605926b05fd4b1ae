/**
 * Stands in for ../openapi-document.ts in the Worker bundle (dev/build-worker.ts `ALIASES`): the
 * OpenAPI document generated before bundling instead of by zod-to-openapi in every isolate that
 * serves /openapi.json or /docs. So the bundle carries neither zod-to-openapi nor zod's JSON
 * Schema code (both aliased away too, see ./zod-to-openapi.ts), and the first /openapi.json costs
 * a JSON.parse instead of building every route's schemas (issue 14, point 6).
 *
 * The document is test/fixtures/openapi.json, which the worker tests prove byte for byte equal
 * to what ../openapi-document.ts builds from the routes; the build writes its compact text to
 * ./openapi.json.txt first (dev/openapi-prebuilt.ts), which esbuild inlines as a string. This
 * module is a chunk of its own, loaded by the first /openapi.json or /docs (../app.ts imports it
 * on first use), so no other request's isolate parses the 128 KB string. (When the Worker was one
 * module, every cold start scanned it; it was gzipped and base64-encoded then, and the first
 * /openapi.json decompressed it.) `npm run bundle-size` checks that the bundle answers
 * /openapi.json and /docs exactly as the app does.
 */
import type { OpenApiDocument } from "../openapi-document.ts";
import text from "./openapi.json.txt" with { type: "text" };

export type { OpenApiDocument };

let document: OpenApiDocument | undefined;

/** The same function as ../openapi-document.ts's, serving the prebuilt document. */
export function openapiDocument(_app: unknown, _mounts: unknown): () => Promise<OpenApiDocument> {
  return () => Promise.resolve((document ??= JSON.parse(text) as OpenApiDocument));
}
