/**
 * ./openapi.json.gz.b64: the OpenAPI document, gzipped and base64-encoded, written before
 * bundling by dev/openapi-prebuilt.ts (wrangler.toml `[build]`) and inlined by wrangler's esbuild
 * as a string (`with { type: "text" }`). Not in git.
 */
declare module "*.gz.b64" {
  const base64: string;
  export default base64;
}
