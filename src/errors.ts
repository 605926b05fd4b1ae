/**
 * Named errors of the library. The Worker maps each class to an HTTP status in
 * one place (`functions/errors.ts`); the library itself knows nothing of HTTP.
 * Each class's code is typed by ./error-codes.ts (the service's codes, per class),
 * so a code not listed there does not type-check.
 */
import type { ConflictErrorCode, RejectedErrorCode, ServiceErrorCode, ValidationErrorCode } from "./error-codes.ts";

/**
 * Where a refused field was, as Hono names a request's parts: a path parameter, the query, the JSON
 * body (the library's names, read options and write inputs), or a header, form or cookie.
 */
export type FieldLocation = "param" | "query" | "json" | "header" | "form" | "cookie";

/** One offending field of a rejected request. */
export interface FieldIssue {
  /**
   * Where the field is in the route's request: a name (`param`), an option of a read (`query`) or
   * the input of a write (`json`); the library labels its refusals as the service does. Absent
   * for the `Idempotency-Key` (`idempotencyKey`) and for refusals of stored state (422).
   */
  in?: FieldLocation;
  /** Dotted path of the field, e.g. `events.3.member`; empty for the whole body. */
  path: string;
  message: string;
}

/**
 * The base of the library's errors. `Code` is the codes it may carry: the service's
 * (ServiceErrorCode, the default; each subclass below fixes its own), or the client's
 * wider ErrorCode (its EdgestatsError, src/client-errors.ts). `NoInfer`: a code outside
 * `Code` is a type error, not a new `Code` inferred from it.
 */
export class EdgestatsError<Code extends string = ServiceErrorCode> extends Error {
  /**
   * `err instanceof X` narrows to X itself: a NotFoundError's `code` is `"not_found"`, and
   * this base class's a `string` (it is the client's errors' base too). Without it, TS narrows
   * to `EdgestatsError<any>`, whose `code` is `any`. Type only (`declare`): the built-in
   * `instanceof` runs.
   */
  declare static [Symbol.hasInstance]: <C extends abstract new (...args: never[]) => unknown>(
    this: C,
    value: unknown,
  ) => value is InstanceType<C>;
  /** snake_case code sent to clients in the error envelope. */
  readonly code: Code;
  readonly details?: FieldIssue[];
  constructor(code: NoInfer<Code>, message: string, details?: FieldIssue[]) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    if (details) this.details = details;
  }
}

/** The request is malformed or a value is out of range. Nothing was written. */
export class ValidationError extends EdgestatsError<ValidationErrorCode> {
  constructor(message: string, details?: FieldIssue[], code: ValidationErrorCode = "invalid_request") {
    super(code, message, details);
  }
}

export class NotFoundError extends EdgestatsError<"not_found"> {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** The request conflicts with stored state (e.g. an idempotency key reused for another body). */
export class ConflictError extends EdgestatsError<ConflictErrorCode> {
  constructor(code: ConflictErrorCode, message: string) {
    super(code, message);
  }
}

/** The request is well formed but the stored rules refuse it (a leaderboard score outside the board's guards). Nothing was written. */
export class RejectedError extends EdgestatsError<RejectedErrorCode> {
  constructor(code: RejectedErrorCode, message: string, details?: FieldIssue[]) {
    super(code, message, details);
  }
}

/** Redis could not be reached or did not answer in time. Nothing was partially written. */
export class StorageUnavailableError extends EdgestatsError<"storage_unavailable"> {
  constructor(
    message = "The storage backend is unreachable; retry shortly (writes with the same Idempotency-Key are safe to retry).",
    options?: { cause?: unknown },
  ) {
    super("storage_unavailable", message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

export class UnauthorizedError extends EdgestatsError<"unauthorized"> {
  constructor(message = "Send a valid API key as 'Authorization: Bearer <key>'.") {
    super("unauthorized", message);
  }
}

export class ForbiddenError extends EdgestatsError<"forbidden"> {
  constructor(message: string) {
    super("forbidden", message);
  }
}

/** The request is too large: its body, or the storage request it makes (Upstash's max request size). Nothing was written. */
export class PayloadTooLargeError extends EdgestatsError<"payload_too_large"> {
  constructor(
    limitBytes: number,
    message = `The request body exceeds ${limitBytes} bytes; split it into smaller batches.`,
  ) {
    super("payload_too_large", message);
  }
}

export class UnsupportedMediaTypeError extends EdgestatsError<"unsupported_media_type"> {
  constructor() {
    super("unsupported_media_type", "Send the body as JSON with 'Content-Type: application/json'.");
  }
}

export class RateLimitedError extends EdgestatsError<"rate_limited"> {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super("rate_limited", `Too many requests for this API key; retry in ${retryAfterSeconds} s.`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The deployment is misconfigured (a var or secret is missing or malformed). */
export class ConfigError extends EdgestatsError<"config_error"> {
  constructor(message: string) {
    super("config_error", message);
  }
}
