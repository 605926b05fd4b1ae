/**
 * Stands in for @asteasolutions/zod-to-openapi in the Worker bundle (dev/build-worker.ts `ALIASES`;
 * 29 KiB of minified code V8 would parse on every cold start). The bundle serves the OpenAPI
 * document prebuilt (./openapi-prebuilt.ts), so what @hono/zod-openapi needs of the library at
 * run time is only what its `OpenAPIHono` touches while registering a route and validating:
 * `.openapi()` on every zod schema, which carries descriptions for the document alone (the
 * schema validates the same without them: ../lazy-route.ts already builds the request schemas
 * with `.openapi()` returning the schema itself), and a registry that keeps nothing. Tests and
 * the library import the real library, and build the document with it.
 */
import type { z } from "zod";

const absent = (): never => {
  throw new Error("zod-to-openapi is left out of the Worker bundle (functions/build/zod-to-openapi.ts)");
};

/** Gives every zod schema an `.openapi(...)` that returns the schema itself. */
export function extendZodWithOpenApi(zod: typeof z): void {
  const proto = zod.ZodType.prototype as { openapi?: unknown };
  if (proto.openapi !== undefined) return;
  proto.openapi = function (this: unknown) {
    return this;
  };
}

/** Routes are registered as `OpenAPIHono.openapi` does, and forgotten: the document is prebuilt. */
export class OpenAPIRegistry {
  readonly definitions: never[] = [];
  register<T>(_refId: string, schema: T): T {
    return schema;
  }
  registerParameter<T>(_refId: string, schema: T): T {
    return schema;
  }
  registerPath(): void {}
  registerWebhook(): void {}
  registerComponent(): never {
    return absent();
  }
}

export class OpenApiGeneratorV3 {
  constructor() {
    absent();
  }
}
export class OpenApiGeneratorV31 extends OpenApiGeneratorV3 {}
export const getOpenApiMetadata = absent;
