import * as z from "../zod.ts";
import type { Context } from "hono";
import { MODULES, SCRIPT, STYLES, contentHash, type Asset } from "../dashboard/assets.ts";
import { DashboardPage } from "../dashboard/page.tsx";
import { errorBody } from "../errors.ts";
import { lazyRoute, once } from "../lazy-route.ts";
import { createRouter } from "../router.ts";
import { notFoundResponse } from "../schemas.ts";
import type { AppEnv } from "../types.ts";

/**
 * The live dashboard: a server-rendered shell at `/` plus its script (an ES
 * module importing the others from /dashboard/{module}) and stylesheet. None of them needs a key or touches Redis; the page's own
 * script reads the JSON API with the read key the person enters.
 */

// The page allows only its own script, styles and API: data from the API is
// shown through textContent, and CSP stops anything injected from running.
const PAGE_SECURITY = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

let pageCache: { html: string; etag: string } | undefined;
function page() {
  // The shell is the same for every request: render it once per isolate.
  if (!pageCache) {
    const html = `<!doctype html>${(<DashboardPage />).toString()}`;
    pageCache = { html, etag: `"${contentHash(html)}"` };
  }
  return pageCache;
}

function notModified(c: Context<AppEnv>, etag: string): boolean {
  const header = c.req.header("if-none-match");
  return header !== undefined && header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

function serveAsset(c: Context<AppEnv>, asset: Asset) {
  const etag = `"${asset.hash}"`;
  // The page links `?v=<hash>`: that exact URL never changes content, so it may be
  // cached for good; any other URL (old page, typed by hand) revalidates.
  const cacheControl =
    c.req.query("v") === asset.hash ? "public, max-age=31536000, immutable" : "public, max-age=0, must-revalidate";
  const headers = {
    "Content-Type": asset.contentType,
    "Cache-Control": cacheControl,
    ETag: etag,
    "X-Content-Type-Options": "nosniff",
  };
  if (notModified(c, etag)) return c.body(null, 304, headers);
  return c.body(asset.body, 200, headers);
}

const text = (type: string, description: string) => ({ content: { [type]: { schema: z.string() } }, description });
const assetQuery = once(() =>
  z.object({
    v: z.string().optional().openapi({ description: "content hash; the page links the current one" }),
  }),
);

export const dashboardRoutes = createRouter();

lazyRoute(
  dashboardRoutes,
  "get",
  "/",
  () => ({
    tags: ["Dashboard"],
    summary: "Live dashboard page (asks for a read key; needs none itself)",
    description:
      "Server-rendered shell; its script polls the JSON API every 5 s with the read key kept in the browser's localStorage.",
    security: [],
    responses: () => ({
      200: text("text/html", "The dashboard page."),
      304: { description: "Not modified (If-None-Match)." },
    }),
  }),
  (c) => {
    const { html, etag } = page();
    const headers = { ...PAGE_SECURITY, "Cache-Control": "no-cache", ETag: etag };
    if (notModified(c, etag)) return c.body(null, 304, headers);
    return c.html(html, 200, headers);
  },
);

lazyRoute(
  dashboardRoutes,
  "get",
  SCRIPT.path,
  () => ({
    tags: ["Dashboard"],
    summary: "The dashboard's client script",
    security: [],
    request: { query: assetQuery() },
    responses: () => ({
      200: text("text/javascript", "The script."),
      304: { description: "Not modified (If-None-Match)." },
    }),
  }),
  (c) => serveAsset(c, SCRIPT),
);

const modulesByPath = new Map(MODULES.map((m) => [m.path, m]));

lazyRoute(
  dashboardRoutes,
  "get",
  "/dashboard/{module}",
  () => ({
    tags: ["Dashboard"],
    summary: "A module the dashboard's script imports",
    security: [],
    request: {
      params: z.object({ module: z.string().openapi({ example: MODULES[0]?.path.slice("/dashboard/".length) }) }),
      query: assetQuery(),
    },
    responses: () => ({
      200: text("text/javascript", "The module."),
      304: { description: "Not modified (If-None-Match)." },
      ...notFoundResponse(),
    }),
  }),
  (c) => {
    const found = modulesByPath.get(`/dashboard/${c.req.valid("param").module}`);
    if (!found) return c.json(errorBody("not_found", `No dashboard module at ${new URL(c.req.url).pathname}.`), 404);
    return serveAsset(c, found);
  },
);

lazyRoute(
  dashboardRoutes,
  "get",
  STYLES.path,
  () => ({
    tags: ["Dashboard"],
    summary: "The dashboard's stylesheet",
    security: [],
    request: { query: assetQuery() },
    responses: () => ({
      200: text("text/css", "The stylesheet."),
      304: { description: "Not modified (If-None-Match)." },
    }),
  }),
  (c) => serveAsset(c, STYLES),
);
