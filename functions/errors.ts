import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ServiceErrorCode } from "../src/error-codes.ts";
import * as errors from "../src/errors.ts";
import { EdgestatsError, RateLimitedError, StorageUnavailableError } from "../src/errors.ts";
import { SummarisedReplay } from "../src/redis/script.ts";

type ErrorClass = abstract new (...args: never[]) => EdgestatsError;
/** The names of the error classes src/errors.ts defines (the list src/index.ts exports). */
type ErrorClassName = {
  [N in keyof typeof errors]: (typeof errors)[N] extends ErrorClass ? N : never;
}[keyof typeof errors];

/**
 * The one place where library errors become HTTP statuses: one entry per class of
 * src/errors.ts, so a class added there without a status here does not type-check.
 * EdgestatsError itself is the base; thrown as such it is a 500.
 */
const STATUS_BY_NAME: Record<Exclude<ErrorClassName, "EdgestatsError">, ContentfulStatusCode> = {
  ValidationError: 400,
  UnauthorizedError: 401,
  ForbiddenError: 403,
  NotFoundError: 404,
  ConflictError: 409,
  PayloadTooLargeError: 413,
  UnsupportedMediaTypeError: 415,
  RejectedError: 422,
  RateLimitedError: 429,
  ConfigError: 500,
  StorageUnavailableError: 503,
};

const STATUS = new Map<ErrorClass, ContentfulStatusCode>(
  Object.entries(STATUS_BY_NAME).map(([name, status]) => [errors[name as keyof typeof STATUS_BY_NAME], status]),
);

/** The `error` of an error answer's envelope (`{"error":{"code","message","details"?}}`). */
export interface ErrorAnswer {
  code: ServiceErrorCode;
  message: string;
  details?: unknown;
}

/**
 * The error envelope. `code` is one of the service's codes (src/error-codes.ts), so a typo or a
 * code not listed there does not type-check.
 */
export function errorBody(code: ServiceErrorCode, message: string, details?: unknown): { error: ErrorAnswer } {
  const text = cut(message, MAX_ANSWERED_MESSAGE);
  return {
    error: details === undefined ? { code, message: text } : { code, message: text, details: bounded(details) },
  };
}

/** Longest message, and longest string in `details`, an error answer carries. */
const MAX_ANSWERED_MESSAGE = 500;
const MAX_ANSWERED_DETAIL = 200;

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… [${text.length} chars]` : text;
}

/**
 * `details` with every string cut: messages quote what was sent (zod's "Unrecognized key" quotes a
 * key whole, in the message and again in `details`), so a 1 MiB body with one long key was answered
 * with ~2 MiB (review 7). Arrays keep every entry: a batch's details list each bad item.
 */
function bounded(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return cut(value, MAX_ANSWERED_DETAIL);
  if (depth > 4 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => bounded(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [cut(k, MAX_ANSWERED_DETAIL), bounded(v, depth + 1)]),
  );
}

/** Longest message part a log line keeps of one error. */
const MAX_LOGGED_MESSAGE = 300;

/**
 * One error (and its causes) as a log line with nothing a caller sent in it.
 * @upstash/redis appends `, command was: [...]` with every argument to its
 * errors (member ids, profile JSON, the script's ARGV); that part is cut, and
 * what remains is shortened. Stack frames are kept (they hold no data).
 */
export function redactError(error: unknown, depth = 0): string {
  if (!(error instanceof Error)) return error === undefined || error === "" ? "" : `(${typeof error})`;
  const message = error.message.replace(/,? ?command was:[\s\S]*$/, ", command was: [redacted]");
  const short =
    message.length > MAX_LOGGED_MESSAGE
      ? `${message.slice(0, MAX_LOGGED_MESSAGE)}… [${message.length} chars]`
      : message;
  const frames = (error.stack ?? "")
    .split("\n")
    .filter((line) => /^\s+at /.test(line))
    .slice(0, 8)
    .join("\n");
  const cause = depth < 3 && error.cause !== undefined ? `\ncaused by ${redactError(error.cause, depth + 1)}` : "";
  return `${error.name}: ${short}${frames ? `\n${frames}` : ""}${cause}`;
}

export function onError(err: Error, c: Context): Response {
  if (err instanceof SummarisedReplay) {
    // A replay whose first response was too large to keep: applied once, summarised now.
    c.header("Idempotent-Replayed", "true");
    c.header("Idempotent-Summarised", "true");
    return c.json({ replayed: true, summarised: true, summary: err.summary, message: err.message }, 200);
  }
  if (err instanceof EdgestatsError) {
    const status = STATUS.get(err.constructor as ErrorClass) ?? 500;
    if (err instanceof RateLimitedError) c.header("Retry-After", String(err.retryAfterSeconds));
    // RFC 9110 10.2.3: a 503 may say when to come back; an Upstash outage is most often a blip
    if (err instanceof StorageUnavailableError) c.header("Retry-After", "1");
    // RFC 9110 15.5.2: a 401 names the scheme to authenticate with (RFC 6750's Bearer)
    if (status === 401) c.header("WWW-Authenticate", 'Bearer realm="edgestats"');
    if (status >= 500) console.error(`[${c.get("requestId") ?? "-"}] ${redactError(err)}`);
    // `instanceof` types the base's code as any string (it is the client's errors' base too); the
    // Worker's are the library's, whose constructors take only the service's codes (src/errors.ts)
    const details = err instanceof errors.ValidationError ? locateDetails(c, err.details) : err.details;
    return c.json(errorBody(err.code as ServiceErrorCode, err.message, details), status);
  }
  if (err instanceof HTTPException) {
    // Hono's own validators throw these, e.g. for a malformed JSON body.
    const status = err.status as ContentfulStatusCode;
    const code = status === 400 ? "invalid_request" : status === 413 ? "payload_too_large" : "http_error";
    return c.json(errorBody(code, err.message || "The request could not be processed."), status);
  }
  console.error(`[${c.get("requestId") ?? "-"}] unhandled ${redactError(err)}`);
  return c.json(
    errorBody("internal_error", "Something went wrong on our side; the request id in X-Request-Id helps us find it."),
    500,
  );
}

/**
 * A feature's own 400 (a value the route's schema let through, e.g. `?day=2026-13-01`) with each
 * detail's `in`, as a schema refusal (./router.ts `refuse`) and the library (src/library/locate.ts)
 * say it: a path parameter's name is "param", a query parameter's "query", the Idempotency-Key
 * "header", else a GET's option ("query") or the body ("json"). Until review 20 these had no `in`.
 */
function locateDetails(c: Context, details: errors.FieldIssue[] | undefined): errors.FieldIssue[] | undefined {
  if (!details?.some((d) => d.in === undefined)) return details;
  let params: Record<string, string> = {};
  try {
    params = c.req.param() as Record<string, string>;
  } catch {
    // no route matched (a 404's own refusal): no path parameters
  }
  const query = new URL(c.req.url).searchParams;
  const read = c.req.method === "GET" || c.req.method === "HEAD";
  return details.map((d) => {
    if (d.in !== undefined) return d;
    const head = d.path.split(".")[0] ?? "";
    const where: errors.FieldLocation =
      d.path === "Idempotency-Key"
        ? "header"
        : Object.hasOwn(params, head)
          ? "param"
          : query.has(head) || read
            ? "query"
            : "json";
    return { in: where, ...d };
  });
}
