import type { OpenAPIHono } from "@hono/zod-openapi";
import { describeCsv } from "./csv.ts";
import { registerRoutes } from "./lazy-route.ts";
import type { Routes } from "./router.ts";
import { OPENAPI_INFO } from "./routes/docs.ts";
import type { Mount } from "./routes/index.ts";
import type { AppEnv } from "./types.ts";

/** The OpenAPI document as /openapi.json serves it (a JSON value). */
export type OpenApiDocument = Record<string, unknown>;

/**
 * The OpenAPI document of `app`, whose routes are `mounts`, built by
 * zod-to-openapi from the routes' schemas on the first call and kept for the
 * isolate's life. Building it loads every router and builds every route's
 * schemas (./lazy-route.ts).
 *
 * The Worker bundle does not contain this module: dev/build-worker.ts's `ALIASES`
 * puts ./build/openapi-prebuilt.ts in its place, which serves the same
 * document generated before bundling (test/fixtures/openapi.json, which the
 * worker tests prove equal to what this module builds), so the bundle needs
 * neither zod-to-openapi nor this code. Tests and the library use this one.
 */
export function openapiDocument(app: OpenAPIHono<AppEnv>, mounts: readonly Mount[]): () => Promise<OpenApiDocument> {
  let document: OpenApiDocument | undefined;
  return async () => {
    if (document) return document;
    const routers = await Promise.all(mounts.map((mount) => mount.load()));
    if (document) return document;
    mounts.forEach((mount, i) => registerRoutes(app.openAPIRegistry, mount.base, routers[i] as Routes));
    app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
      type: "http",
      scheme: "bearer",
      description: "An API key from INGEST_KEYS, READ_KEYS or ADMIN_KEYS.",
    });
    app.openAPIRegistry.registerComponent("securitySchemes", "qstashSignature", {
      type: "apiKey",
      in: "header",
      name: "Upstash-Signature",
    });
    return (document = describeCsv(
      app.getOpenAPI31Document({ openapi: "3.1.0", info: OPENAPI_INFO, security: [{ bearerAuth: [] }] }),
    ) as unknown as OpenApiDocument);
  };
}
