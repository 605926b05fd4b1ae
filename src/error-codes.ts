/**
 * The one list of the `code`s the service answers with in its error envelope
 * (`{"error":{"code","message","details"?}}`), as types only: this module declares no value, and
 * every import of it is `import type`, so neither the Worker's bundle nor the client's carries a
 * list of codes, nor any code for it (checked with `npm run -s bundle-size` when it came in).
 *
 * Every place that decides a code is typed by it, so a typo, or a new code not listed here, fails
 * `npm run -s typecheck`: the constructors of src/errors.ts (each class takes or fixes codes of its
 * own status, below), hence the refusals of the Lua scripts (their `refusals` maps build those
 * errors), `errorBody(code, …)` (functions/errors.ts: onError, app.ts's 404/405, csv.ts's 406, the
 * dashboard's 404) and the health route's envelope. The client's `ErrorCode`
 * (src/client-errors.ts) is `ServiceErrorCode | ClientErrorCode`, the client's own codes.
 *
 * Types see only what is typed: a code cast (`as`), or a Lua refusal's own name passed on as a code
 * (`r.refused`), would pass tsc unlisted. test/unit/client-error-codes.test.ts reads every place
 * that decides a code with TypeScript's parser and fails on a code produced but not listed here,
 * on a code listed here that nothing produces, and on a code decided in a way it cannot read.
 *
 * To add a code: add it to its class's type below (or to ServiceErrorCode for an `errorBody` of
 * the app), then produce it; keep every import of this module `import type`.
 */

/** 400, `ValidationError` (src/errors.ts): the request is malformed or out of range; nothing written. */
export type ValidationErrorCode =
  /** The default: a field is missing, of the wrong type or out of range (also Hono's own 400s, onError). */
  | "invalid_request"
  /** The body is not JSON, not UTF-8, or nested too deep (functions/middleware/body.ts). */
  | "malformed_json"
  /** A counter read or union would merge more entries than its bound (src/counters/limits.ts). */
  | "too_many_entries"
  /** A counter sorted by member has more members than it can sort (src/counters/read-scripts.ts). */
  | "too_many_members";

/** 409, `ConflictError`: the request conflicts with stored state; nothing written. */
export type ConflictErrorCode =
  /** An Idempotency-Key already used for another request (src/redis/run.ts). */
  | "idempotency_key_reused"
  /** A histogram holding data with another bucketWidth (src/histograms/scripts.ts). */
  | "bucket_width_conflict"
  /** A leaderboard's tie policy or reset changed while it has players (src/leaderboards/scripts.ts). */
  | "board_not_empty"
  /** The webhook delivery queue is full; the test event was not queued (src/webhooks/scripts.ts). */
  | "queue_full";

/** 422, `RejectedError`: well formed, refused by the stored rules (a leaderboard's guards); nothing written. */
export type RejectedErrorCode = "score_rejected";

/** Every code the service answers with: the classes' codes above, the fixed codes of the other classes, the app's own. */
export type ServiceErrorCode =
  | ValidationErrorCode
  | ConflictErrorCode
  | RejectedErrorCode
  /** 401, `UnauthorizedError`. */
  | "unauthorized"
  /** 403, `ForbiddenError`: the key's scope does not allow the request. */
  | "forbidden"
  /** 404, `NotFoundError` (no such stream, member, room, board, player or webhook), or a path no route serves. */
  | "not_found"
  /** 405, a path routed for other methods (functions/app.ts, with `Allow`). */
  | "method_not_allowed"
  /** 406, CSV asked of an answer that is no list (functions/csv.ts). */
  | "not_acceptable"
  /** 413, `PayloadTooLargeError`: a body over 1 MiB, or a storage request over Upstash's 10 MB (src/redis/storage-errors.ts); and Hono's own 413s, onError. */
  | "payload_too_large"
  /** 415, `UnsupportedMediaTypeError`. */
  | "unsupported_media_type"
  /** 429, `RateLimitedError`, with Retry-After. */
  | "rate_limited"
  /** 500, `ConfigError`: a var or secret is missing or malformed. */
  | "config_error"
  /** 500, anything else thrown (functions/errors.ts, onError). */
  | "internal_error"
  /** 503, `StorageUnavailableError`, and /healthz when Redis is unreachable. */
  | "storage_unavailable"
  /** Any other status of Hono's own HTTPException (onError). */
  | "http_error";
