/**
 * Stands in for ../openapi-document.ts in the Worker bundle (wrangler.toml `[alias]`): the
 * OpenAPI document generated before bundling instead of by zod-to-openapi in every isolate that
 * serves /openapi.json or /docs. So the bundle carries neither zod-to-openapi nor zod's JSON
 * Schema code (both aliased away too, see ./zod-to-openapi.ts), which V8 would otherwise parse
 * on every cold start, and the first /openapi.json costs a decompression instead of building
 * every route's schemas (issue 14, point 6).
 *
 * The document is test/fixtures/openapi.json, which the worker tests prove byte for byte equal
 * to what ../openapi-document.ts builds from the routes; `wrangler deploy` (and `--dry-run`)
 * writes it gzipped and base64-encoded to ./openapi.json.gz.b64 first (wrangler.toml `[build]`,
 * dev/openapi-prebuilt.ts): as a plain string the 128 KB text would cost V8 more to parse than
 * the generator it replaces; gzipped it is 21 KB. `npm run bundle-size` checks that the bundle
 * answers /openapi.json and /docs exactly as the app does.
 */
import type { OpenApiDocument } from "../openapi-document.ts";
import gzipped from "./openapi.json.gz.b64" with { type: "text" };

export type { OpenApiDocument };

let document: Promise<OpenApiDocument> | undefined;

async function decode(): Promise<OpenApiDocument> {
  const bytes = Uint8Array.from(atob(gzipped), (ch) => ch.charCodeAt(0));
  const text = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  return JSON.parse(text) as OpenApiDocument;
}

/** The same function as ../openapi-document.ts's, serving the prebuilt document. */
export function openapiDocument(_app: unknown, _mounts: unknown): () => Promise<OpenApiDocument> {
  return () => (document ??= decode());
}
