/**
 * The dashboard's browser modules, imported by the Worker as their source text
 * (wrangler.toml `[[rules]] type = "Text"`). They are type-checked as browser
 * code by functions/dashboard/client/tsconfig.json, not as Worker code.
 */
declare module "*.browser.js" {
  const source: string;
  export default source;
}
