/**
 * Stands in for zod's `v4/locales/index.js` in the Worker bundle (dev/build-worker.ts `ALIASES`): zod
 * re-exports every locale as `z.locales` (and `z.core.locales`), a namespace no bundler can shake
 * once @hono/zod-openapi hands the whole `z` to zod-to-openapi, so ~50 translations (~38 KiB of
 * gzip) rode along although the Worker only speaks English (zod sets `en` itself, from
 * `locales/en.js`, not through this index). Tests and the library import zod unchanged.
 */
export { default as en } from "zod/v4/locales/en.js";
