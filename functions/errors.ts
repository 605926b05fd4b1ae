import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import {
  ConfigError,
  ConflictError,
  EdgestatsError,
  ForbiddenError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  StorageUnavailableError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  ValidationError,
} from "../src/errors.ts";

/** The one place where library errors become HTTP statuses. */
const STATUS = new Map<Function, ContentfulStatusCode>([
  [ValidationError, 400],
  [UnauthorizedError, 401],
  [ForbiddenError, 403],
  [NotFoundError, 404],
  [ConflictError, 409],
  [PayloadTooLargeError, 413],
  [UnsupportedMediaTypeError, 415],
  [RateLimitedError, 429],
  [ConfigError, 500],
  [StorageUnavailableError, 503],
]);

export function errorBody(code: string, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

export function onError(err: Error, c: Context): Response {
  if (err instanceof EdgestatsError) {
    const status = STATUS.get(err.constructor) ?? 500;
    if (err instanceof RateLimitedError) c.header("Retry-After", String(err.retryAfterSeconds));
    if (status >= 500) console.error(`[${c.get("requestId") ?? "-"}] ${err.name}: ${err.message}`, err.cause ?? "");
    return c.json(errorBody(err.code, err.message, err.details), status);
  }
  if (err instanceof HTTPException) {
    // Hono's own validators throw these, e.g. for a malformed JSON body.
    const status = err.status as ContentfulStatusCode;
    const code = status === 400 ? "invalid_request" : status === 413 ? "payload_too_large" : "http_error";
    return c.json(errorBody(code, err.message || "The request could not be processed."), status);
  }
  console.error(`[${c.get("requestId") ?? "-"}] unhandled`, err);
  return c.json(errorBody("internal_error", "Something went wrong on our side; the request id in X-Request-Id helps us find it."), 500);
}
