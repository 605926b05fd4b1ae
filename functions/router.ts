import { OpenAPIHono } from "@hono/zod-openapi";
import { ValidationError, type FieldIssue } from "../src/errors.ts";
import type { AppEnv } from "./types.ts";

/**
 * Every router is created here so that a failed zod validation, in any part
 * of a request, becomes the same 400 envelope listing each bad field.
 */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (result.success) return;
      const details: (FieldIssue & { in: string })[] = result.error.issues.map((issue) => ({
        in: result.target,
        path: issue.path.map(String).join("."),
        message: issue.message,
      }));
      const first = details[0];
      const where = first ? `${first.in}${first.path ? ` field '${first.path}'` : ""}` : "request";
      throw new ValidationError(`Invalid ${where}: ${first?.message ?? "bad value"}.`, details);
    },
  });
}
