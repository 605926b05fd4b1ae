import { OpenAPIHono, type Hook } from "@hono/zod-openapi";
import { LinearRouter } from "hono/router/linear-router";
import { ValidationError, type FieldIssue } from "../src/errors.ts";
import type { AppEnv } from "./types.ts";

/**
 * A failed zod validation, in any part of a request, becomes the same 400
 * envelope listing each bad field.
 */
export const validationHook: Hook<unknown, AppEnv, string, void> = (result) => {
  if (result.success) return;
  const details: (FieldIssue & { in: string })[] = result.error.issues.map((issue) => ({
    in: result.target,
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
  const first = details[0];
  const where = first ? `${first.in}${first.path ? ` field '${first.path}'` : ""}` : "request";
  throw new ValidationError(`Invalid ${where}: ${first?.message ?? "bad value"}.`, details);
};

/**
 * Every router is created here so that every route validates with
 * `validationHook`. Routes are added with `lazyRoute` (./lazy-route.ts).
 */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    // LinearRouter: no matcher to compile on the first request (the default
    // RegExpRouter builds one over every route, ~5-10 ms of a cold isolate's
    // CPU); matching our ~50 routes linearly costs microseconds.
    router: new LinearRouter(),
    defaultHook: validationHook,
  });
}
