import { CHARTS_JS } from "./charts.ts";
import { CORE_JS } from "./core.ts";
import { LOADERS_JS } from "./loaders.ts";
import { MAIN_JS } from "./main.ts";

/**
 * The dashboard's whole client script, served as /dashboard.js. One IIFE in
 * strict mode so nothing leaks into the page's globals.
 */
export const CLIENT_JS = `// edgestats dashboard (served by the Worker; no build step, no third-party code)
(() => {
"use strict";
${CORE_JS}
${CHARTS_JS}
${LOADERS_JS}
${MAIN_JS}
})();
`;
