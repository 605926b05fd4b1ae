/**
 * Named errors of the library. The Worker maps each class to an HTTP status in
 * one place (`functions/errors.ts`); the library itself knows nothing of HTTP.
 */

/** One offending field of a rejected request. */
export interface FieldIssue {
  /** Dotted path of the field, e.g. `events.3.member`; empty for the whole body. */
  path: string;
  message: string;
}

export class EdgestatsError extends Error {
  /** snake_case code sent to clients in the error envelope. */
  readonly code: string;
  readonly details?: FieldIssue[];
  constructor(code: string, message: string, details?: FieldIssue[]) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    if (details) this.details = details;
  }
}

/** The request is malformed or a value is out of range. Nothing was written. */
export class ValidationError extends EdgestatsError {
  constructor(message: string, details?: FieldIssue[], code = "invalid_request") {
    super(code, message, details);
  }
}

export class NotFoundError extends EdgestatsError {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** The request conflicts with stored state (e.g. an idempotency key reused for another body). */
export class ConflictError extends EdgestatsError {
  constructor(code: string, message: string) {
    super(code, message);
  }
}

/** The request is well formed but the stored rules refuse it (a leaderboard score outside the board's guards). Nothing was written. */
export class RejectedError extends EdgestatsError {
  constructor(code: string, message: string, details?: FieldIssue[]) {
    super(code, message, details);
  }
}

/** Redis could not be reached or did not answer in time. Nothing was partially written. */
export class StorageUnavailableError extends EdgestatsError {
  constructor(
    message = "The storage backend is unreachable; retry shortly (writes with the same Idempotency-Key are safe to retry).",
    options?: { cause?: unknown },
  ) {
    super("storage_unavailable", message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

export class UnauthorizedError extends EdgestatsError {
  constructor(message = "Send a valid API key as 'Authorization: Bearer <key>'.") {
    super("unauthorized", message);
  }
}

export class ForbiddenError extends EdgestatsError {
  constructor(message: string) {
    super("forbidden", message);
  }
}

export class PayloadTooLargeError extends EdgestatsError {
  constructor(limitBytes: number) {
    super("payload_too_large", `The request body exceeds ${limitBytes} bytes; split it into smaller batches.`);
  }
}

export class UnsupportedMediaTypeError extends EdgestatsError {
  constructor() {
    super("unsupported_media_type", "Send the body as JSON with 'Content-Type: application/json'.");
  }
}

export class RateLimitedError extends EdgestatsError {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super("rate_limited", `Too many requests for this API key; retry in ${retryAfterSeconds} s.`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The deployment is misconfigured (a var or secret is missing or malformed). */
export class ConfigError extends EdgestatsError {
  constructor(message: string) {
    super("config_error", message);
  }
}
