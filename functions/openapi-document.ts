import { describeCsv } from "./csv.ts";
import { defaultScope } from "./middleware/auth.ts";
import { registerRoutes, zodReady } from "./lazy-route.ts";
import { zodParts } from "./zod.ts";
import type { Routes } from "./router.ts";
import { OPENAPI_INFO } from "./routes/docs.ts";
import type { Mount } from "./routes/index.ts";
import type { AppEnv } from "./types.ts";

/** The OpenAPI document as /openapi.json serves it (a JSON value). */
export type OpenApiDocument = Record<string, unknown>;

/**
 * The OpenAPI document of the app whose routes are `mounts`, built by
 * zod-to-openapi from the routes' schemas on the first call and kept for the
 * isolate's life. Building it loads zod, every router, and builds every
 * route's schemas (./lazy-route.ts), registered in an OpenAPIHono of its own
 * (the app is a plain Hono app: ./router.ts).
 *
 * The Worker bundle does not contain this module: dev/build-worker.ts's `ALIASES`
 * puts ./build/openapi-prebuilt.ts in its place, which serves the same
 * document generated before bundling (test/fixtures/openapi.json, which the
 * worker tests prove equal to what this module builds), so the bundle needs
 * neither zod-to-openapi nor this code. Tests and the library use this one.
 */
export function openapiDocument(_app: unknown, mounts: readonly Mount[]): () => Promise<OpenApiDocument> {
  let document: OpenApiDocument | undefined;
  return async () => {
    if (document) return document;
    const [routers] = await Promise.all([Promise.all(mounts.map((mount) => mount.load())), zodReady()]);
    if (document) return document;
    const app = new (zodParts().OpenAPIHono)<AppEnv>();
    mounts.forEach((mount, i) => registerRoutes(app.openAPIRegistry, mount.base, routers[i] as Routes));
    // The app's own two routes (./app.ts), which no router records: the contract asks the document
    // to describe every route, these too (review 17).
    app.openAPIRegistry.registerPath({
      method: "get",
      path: "/openapi.json",
      tags: ["Operations"],
      summary: "This OpenAPI 3.1 document (no key)",
      security: [],
      responses: {
        200: { description: "The document.", content: { "application/json": { schema: { type: "object" } } } },
      },
    });
    app.openAPIRegistry.registerPath({
      method: "get",
      path: "/docs",
      tags: ["Operations"],
      summary: "The API reference page, rendered from this document (no key)",
      security: [],
      responses: { 200: { description: "An HTML page.", content: { "text/html": { schema: { type: "string" } } } } },
    });
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
      withScopes(app.getOpenAPI31Document({ openapi: "3.1.0", info: OPENAPI_INFO, security: [{ bearerAuth: [] }] })),
    ) as unknown as OpenApiDocument);
  };
}

/**
 * Each /v1 operation's `security` names the scope its key needs as a role (OpenAPI 3.1 allows role
 * names for an http scheme): `[{ bearerAuth: ["admin"] }]`. Taken from the table the auth middleware
 * refuses by (./middleware/auth.ts `defaultScope`, held to every route's own scope by
 * test/worker/review-scopes.test.ts), so the document and the 403s cannot drift apart. Until review
 * 22 every operation inherited `bearerAuth: []`, and a client found an admin-only route by its 403.
 */
function withScopes<D extends { paths?: object }>(doc: D): D {
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, unknown>>)) {
    if (!path.startsWith("/v1/")) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== "object" || !("responses" in op) || "security" in op) continue;
      (op as { security?: unknown }).security = [{ bearerAuth: [defaultScope(method.toUpperCase(), path)] }];
    }
  }
  return doc;
}
