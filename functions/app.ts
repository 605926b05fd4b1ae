import { requestId } from "hono/request-id";
import { errorBody, onError } from "./errors.ts";
import { requireScope } from "./middleware/auth.ts";
import { jsonBodyGuard } from "./middleware/body.ts";
import { createMiddleware } from "./middleware/define.ts";
import { rateLimit } from "./middleware/rate-limit.ts";
import { idempotencyKey } from "./middleware/idempotency.ts";
import { apiHeaders, headerGuard, pathGuard, requestContext } from "./middleware/request.ts";
import { onFirstUse } from "./first-use.ts";
import { allowedMethods, mountRoutes } from "./mount.ts";
import type { OpenApiDocument } from "./openapi-document.ts";
import { createAppRouter } from "./router.ts";
import type { AppEnv } from "./types.ts";
import { mounts } from "./routes/index.ts";

export interface AppOptions {
  /**
   * The clock; tests pass a fake one to move across hours and days.
   * @default Date.now
   */
  now?: () => number;
}

/** The app's own routes (below), for the 405 check of a path that has no route for the method asked. */
const APP_ROUTES = [
  ["GET", "/openapi.json"],
  ["GET", "/docs"],
] as const;

const NOSNIFF = { "X-Content-Type-Options": "nosniff" };
// /docs shares the dashboard's origin (where a read key sits in localStorage): it runs no script and
// has one inline <style>, so its CSP allows only that (review 19); like the dashboard, it cannot be framed.
const DOCS_SECURITY = {
  ...NOSNIFF,
  "Content-Security-Policy":
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

/** ./middleware/qstash.ts, on first use (the jobs route's). */
const qstash = onFirstUse(() => import("./middleware/qstash.ts"));
const csv = onFirstUse(() => import("./csv.ts"));

/** Runs the route, then ./csv.ts `csvAnswer` on a 2xx answer (which alone can become CSV). */
const csvExport = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  if (c.res.status >= 200 && c.res.status < 300) await (await csv()).csvAnswer(c);
});

export function createApp(options: AppOptions = {}) {
  const app = createAppRouter();
  app.use("*", requestId({ headerName: "X-Request-Id" }));
  app.use("*", requestContext(options.now ?? Date.now));
  app.use("/v1/*", apiHeaders);
  // what else answers with a caller's text or a key's data (review 20); the dashboard's, /docs' and
  // /openapi.json's own answers set their headers themselves
  app.use("/internal/*", apiHeaders);
  app.use("/healthz/*", apiHeaders);
  app.use("/v1/*", requireScope());
  app.use("/v1/*", pathGuard);
  // what the headers alone refuse, before the limiter's Redis call
  app.use("/v1/*", headerGuard);
  app.use("/v1/*", rateLimit);
  app.use("/v1/*", jsonBodyGuard);
  // Who is calling is settled before anything reads the body (the signature's
  // body hash is the last check, on a bounded read).
  // Loaded by the first /internal request (the QStash-triggered jobs): no other request runs it,
  // and the entry's room (what every cold isolate compiles) went to ./mount.ts's preload instead.
  app.use("/internal/*", async (c, next) => (await qstash()).signedOrAdmin(c, next));
  app.use("/internal/*", jsonBodyGuard);
  app.use("/v1/*", idempotencyKey);
  // Only a GET's answer can become CSV (./csv.ts `csvAnswer` passes every other method's through
  // untouched): the others skip it. HEAD too: Hono answers it by running the GET (c.req.method
  // stays "HEAD") and drops the body, and its headers must be the GET's (review 18: it said
  // application/json to a CSV request). ./csv.ts (its lists table and the format) loads on the
  // first 2xx answer to a GET, not with the entry every cold isolate compiles (issue 14, point 6).
  app.use(
    "/v1/*",
    createMiddleware<AppEnv>((c, next) =>
      c.req.method === "GET" || c.req.method === "HEAD" ? csvExport(c, next) : next(),
    ),
  );

  // Each router's module is loaded by the first request that reaches one of its routes (./mount.ts).
  for (const mount of mounts) mountRoutes(app, mount);

  // The OpenAPI document and the docs page are built on their first request
  // and kept for the isolate's life: no other request pays for them, nor loads
  // their modules. Building the document loads every router and builds every
  // route's schemas (./lazy-route.ts), which the other requests build one
  // route at a time; the Worker bundle serves it prebuilt instead
  // (./openapi-document.ts).
  const documentOf = onFirstUse(async () => (await import("./openapi-document.ts")).openapiDocument(app, mounts));
  const document = async (): Promise<OpenApiDocument> => (await documentOf())();
  let page: string | undefined;
  app.get("/openapi.json", async (c) => c.json(await document(), 200, NOSNIFF));
  app.get("/docs", async (c) => {
    if (page === undefined) {
      const { docsPage } = await import("./routes/docs.ts");
      page = String(await docsPage(await document()));
    }
    return c.html(page, 200, DOCS_SECURITY);
  });

  app.notFound((c) => {
    const path = new URL(c.req.url).pathname;
    // the message quotes the path, on any path: the API's headers (./middleware/request.ts apiHeaders)
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Cache-Control", "private, no-store");
    const allow = allowedMethods(mounts, APP_ROUTES, path);
    if (allow.length > 0) {
      c.header("Allow", allow.join(", "));
      return c.json(
        errorBody("method_not_allowed", `${path} takes ${allow.join(", ")}, not ${c.req.method}; see /docs.`),
        405,
      );
    }
    return c.json(errorBody("not_found", `No route for ${c.req.method} ${path}; see /docs.`), 404);
  });
  app.onError(onError);
  return app;
}

export type App = ReturnType<typeof createApp>;
