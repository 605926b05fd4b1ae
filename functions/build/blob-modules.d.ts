/**
 * ./openapi.json.txt: the OpenAPI document's compact JSON text, written before bundling by
 * dev/openapi-prebuilt.ts (dev/build-worker.ts) and inlined by esbuild as a string
 * (`with { type: "text" }`). Not in git.
 */
declare module "*.json.txt" {
  const text: string;
  export default text;
}
