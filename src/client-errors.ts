/**
 * The errors of `edgestats/client` (./client.ts): an API error answer, a summarised replay, and
 * how an attempt comes to one: an answer that is not a 2xx, or no whole answer within the attempt's
 * deadline (the fetch and the reading of the body under one signal).
 */
import type { ServiceErrorCode } from "./error-codes.ts";
import { EdgestatsError as LibraryError, type FieldIssue } from "./errors.ts";

export type { ServiceErrorCode } from "./error-codes.ts";

/**
 * The codes only the client decides, never the service: `network_error` (status 0, no response
 * arrived), `aborted` (status 0, the call's `signal` aborted it), `invalid_response` (a 2xx in another format than the one asked for), `replay_summarised`
 * (ReplaySummarisedError) and `http_<status>` for an answer without the envelope (a proxy's page).
 */
export type ClientErrorCode = "network_error" | "aborted" | "invalid_response" | "replay_summarised" | `http_${number}`;

/**
 * Every `code` an EdgestatsError can carry: the service's (ServiceErrorCode, src/error-codes.ts,
 * the one list, which types every place the service decides a code) and the client's own. Types
 * only, so that no bundle carries a list of codes (the OpenAPI document types `code` as a plain
 * string); test/unit/client-error-codes.test.ts reads every code the service's sources can answer
 * with and fails on one ServiceErrorCode misses (a cast, a Lua refusal's name passed on) or lists
 * and nothing produces, and on a ClientErrorCode the service produces or the client does not.
 *
 * A 404 is `status === 404`, code `not_found` (no such stream, counter member, room, board, player
 * or webhook), or, for a path the service does not route, also `not_found`.
 */
export type ErrorCode = ServiceErrorCode | ClientErrorCode;

/** An error answer of the API (`{"error":{"code","message","details"?}}`), or a request that never got one (`status` 0). */
export class EdgestatsError extends LibraryError<ErrorCode> {
  /** The envelope's code (see ErrorCode); narrows with `===`, e.g. `err.code === "score_rejected"`. */
  declare readonly code: ErrorCode;
  /** HTTP status; 0 when no whole answer arrived (a network error, or `timeoutMs` passed before the body ended). */
  readonly status: number;
  /** Seconds the server asked to wait (429, 503), when it said. */
  readonly retryAfterSeconds?: number;
  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    details?: FieldIssue[],
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(code, message, details);
    this.status = status;
    if (options?.cause !== undefined) this.cause = options.cause;
    if (options?.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * A retried write whose first attempt was applied but whose answer was lost,
 * and whose result was too large for the service to keep (over 2 KB: a big
 * batch's per-item results): the write happened exactly once, and only its
 * summary is known. Thrown instead of returning a body of another shape.
 */
export class ReplaySummarisedError extends EdgestatsError {
  /** The first result's size, digest and item count; or, for a request first sent queued, its 202's request id. */
  readonly summary:
    { bytes: number; sha1: string; items: number | null } | { queued: true; requestId: string; acceptedAt?: number };
  constructor(
    summary:
      { bytes: number; sha1: string; items: number | null } | { queued: true; requestId: string; acceptedAt?: number },
  ) {
    super(
      200,
      "replay_summarised",
      "queued" in summary
        ? "The write was applied once, from the ingest queue it was first sent to; the retry got its request id."
        : "The write was applied once; its result was too large to keep, so the retry got only its summary.",
    );
    this.summary = summary;
  }
}

/** The error an answer that is not a 2xx stands for, its body `text` (as much as arrived): its envelope, else its status and text. */
export function errorOf(response: Response, text: string, method: string, path: string): EdgestatsError {
  const retryAfter = retryAfterOf(response.headers.get("retry-after"));
  const extra = retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter };
  try {
    const { error } = JSON.parse(text) as { error?: { code?: ErrorCode; message?: string; details?: FieldIssue[] } };
    if (error?.code)
      return new EdgestatsError(response.status, error.code, error.message ?? error.code, error.details, extra);
  } catch {
    // not the envelope: a proxy's page, say
  }
  return new EdgestatsError(
    response.status,
    `http_${response.status}`,
    `${method} ${path} answered ${response.status}: ${text.slice(0, 200)}`,
    undefined,
    extra,
  );
}

/**
 * Retry-After in seconds: the service sends seconds, but the header may be an HTTP-date (RFC 9110
 * §10.2.3), as proxies and load balancers in front of the Worker send it; a date was read as NaN
 * and dropped (review 17), so it is the seconds until then, rounded up. Undefined when absent, past
 * or unreadable.
 */
function retryAfterOf(value: string | null): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (!Number.isNaN(seconds)) return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
  const at = Date.parse(value);
  const left = Math.ceil((at - Date.now()) / 1000);
  return Number.isFinite(left) && left > 0 ? left : undefined;
}

/** A 2xx whose body is not in the format asked for (a proxy's page): the service's error, not a bare SyntaxError. */
export function invalidResponse(status: number, method: string, path: string, format: string, cause?: unknown) {
  return new EdgestatsError(
    status,
    "invalid_response",
    `${method} ${path} answered ${status} without ${format}.`,
    undefined,
    {
      cause,
    },
  );
}

/** No whole answer: `what` happened (no response, or a body cut short or past the deadline), status 0. */
export function networkError(what: string, cause: unknown): EdgestatsError {
  const reason =
    cause instanceof Error && cause.name === "TimeoutError"
      ? "timeoutMs passed"
      : cause instanceof Error
        ? cause.message
        : String(cause);
  return new EdgestatsError(0, "network_error", `${what}: ${reason}`, undefined, { cause });
}

/** A path parameter that is a dot segment ("." or ".."), which URL parsing would resolve away: refused before sending. */
export function dotSegment(name: string, value: string): EdgestatsError {
  return new EdgestatsError(
    400,
    "invalid_request",
    `'${value}' cannot be sent as {${name}} in a URL path (a dot segment); use the library, or another id.`,
    [{ path: name, message: "'.' and '..' cannot travel in a URL path" }],
  );
}

/**
 * A path parameter refused before sending, with the refusal the route gives it (`{in: "param"}`):
 * an empty one leaves an empty segment, and `/v1/presence/` is the room list's path, so
 * presence.room("") resolved with the list typed as a room's stats (review 25).
 */
export function badParam(name: string, rule: string): EdgestatsError {
  return new EdgestatsError(400, "invalid_request", `Invalid param field '${name}': ${rule}.`, [
    { in: "param", path: name, message: rule },
  ]);
}

/**
 * The call's own `signal` aborted it (before it was sent, mid-attempt or while it waited to retry):
 * status 0 like a network error, but its own code, as nothing is retried after it; `cause` is the
 * signal's reason (an AbortError DOMException unless the caller gave one).
 */
export function abortedError(method: string, path: string, signal: AbortSignal): EdgestatsError {
  return new EdgestatsError(0, "aborted", `${method} ${path} was aborted by its signal.`, undefined, {
    cause: signal.reason,
  });
}

/**
 * A number option outside its range is refused when the client is made: `retries: Infinity` (or NaN,
 * which compared false with every attempt) with a zero backoff retried a failing call for ever, and a
 * NaN `timeoutMs` timed every call out at once.
 */
export function checkOption(name: string, value: number, min: number, max: number, integer = false): number {
  if (Number.isFinite(value) && value >= min && value <= max && (!integer || Number.isInteger(value))) return value;
  const what = `${integer ? "an integer" : "a number"} from ${min} to ${max}`;
  throw new EdgestatsError(400, "invalid_request", `createClient: '${name}' must be ${what}.`, [
    { path: name, message: `must be ${what}` },
  ]);
}

/**
 * `baseUrl` without its trailing slashes, refused unless an absolute http(s) URL: one without a
 * scheme ("stats.example.com") made every attempt's `new Request` throw, which was taken for a
 * network error and retried with backoff (review 21).
 */
export function checkBaseUrl(value: string): string {
  if (!/^https?:\/\/[^/]/i.test(value) || !URL.canParse(value))
    throw new EdgestatsError(400, "invalid_request", "createClient: 'baseUrl' must be an absolute http(s) URL.", [
      { path: "baseUrl", message: "must be an absolute http(s) URL" },
    ]);
  return value.replace(/\/+$/, "");
}
