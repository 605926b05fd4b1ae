import { ConfigError, PayloadTooLargeError, StorageUnavailableError } from "../errors.ts";
import { MAX_REPLY_BYTES, MAX_REQUEST_BYTES } from "./http.ts";

/**
 * What an error of the Upstash client means for a call (src/redis/run.ts): Redis's NOSCRIPT (send
 * the script's text), the storage out of reach (StorageUnavailableError, the API's 503), a token
 * Upstash refuses (ConfigError), or Redis's own reply to a script of ours (the error as it is).
 * Read from the error's name, message and HTTP status, as both this library's client
 * (src/redis/http.ts) and @upstash/redis's (a library user's) throw them.
 */

/**
 * The reply's own text of a client error: @upstash/redis with auto-pipelining (its default, a
 * library user's client) puts `Command failed: ` before it.
 */
function replyText(message: string): string {
  return message.startsWith("Command failed: ") ? message.slice(16) : message;
}

/**
 * Whether an error's text is Redis's NOSCRIPT: its start only, since the client's message of an
 * HTTP 400 goes on with `, command was: [...]`, every argument (a caller's member) included.
 */
export function isNoScript(message: string | undefined): boolean {
  return message !== undefined && /^NOSCRIPT\b/.test(replyText(message));
}

/**
 * Upstash's answers to a database over its plan's limits (upstash.com/docs/redis/troubleshooting)
 * and Redis's at maxmemory: the storage cannot serve now; nothing of ours is wrong. (`ERR max
 * request size exceeded` is not one: the request itself is too big, TOO_BIG.)
 */
const OVER_LIMITS =
  /^(ERR max (daily )?requests? limit exceeded|ERR max concurrent connections exceeded|ERR DB capacity quota exceeded|OOM\b)/;

/**
 * Upstash's answer to a request over its max request size (`ERR max request size exceeded. Limit:
 * 10485760 bytes, Actual: <n> bytes`), or the client's own refusal of one, in the same words
 * (src/redis/http.ts): no retry helps, the request must be smaller. Upstash is reported to answer a
 * reply over its limit the same way (the API's largest legal reply, 10.3 MB, is an escaped JSON of
 * less than half that in Redis).
 */
const TOO_BIG = /^ERR max request size exceeded\b/;

/** Upstash refusing the token: wrong or revoked (WRONGPASS, NOAUTH), or read-only (NOPERM). */
const REFUSED_TOKEN = /^(WRONGPASS|NOAUTH|NOPERM)\b/;

/**
 * Fetch failures, timeouts, 5xx answers, Upstash's limits and a reply too large to read become
 * StorageUnavailableError; a refused token is a ConfigError and a request over Upstash's max request
 * size a PayloadTooLargeError (no retry helps either); script bugs stay errors.
 */
export function toStorageError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const name = error.name;
  const text = replyText(error.message);
  // the jobs' subrequest budget refusing a request (src/job-budget.ts): nothing was sent
  if (name === "SubrequestBudgetSpent") return error;
  // the HTTP status of a reply that was not a 2xx (this library's client keeps it; others do not)
  const status = (error as { status?: unknown }).status;
  if (name === "UpstashError" && (status === 401 || status === 403 || REFUSED_TOKEN.test(text)))
    return new ConfigError(
      "Upstash refused the REST token (UPSTASH_REDIS_REST_TOKEN, or the token given to createRedis): it is wrong, revoked or read-only.",
    );
  if (name.startsWith("Upstash") && TOO_BIG.test(text))
    return new PayloadTooLargeError(
      MAX_REQUEST_BYTES,
      `The request is larger than the storage accepts in one request (${MAX_REQUEST_BYTES} bytes); split it into smaller batches.`,
    );
  if (name === "UpstashReplyTooLarge")
    return new StorageUnavailableError(
      `The storage's reply passed ${MAX_REPLY_BYTES} bytes and was not read; a write with the same Idempotency-Key is safe to retry.`,
      { cause: error },
    );
  // A reply from Redis itself (a script bug, a wrong type) is our fault, not an outage: a 400, or
  // a command's error inside a 200 (no status); never a gateway's 5xx that happens to say ERR.
  const fromRedis = status === undefined || status === 400;
  const isRedisReply =
    name === "UpstashError" &&
    fromRedis &&
    /^(ERR|WRONGTYPE|NOSCRIPT|EXECABORT)\b/.test(text) &&
    !OVER_LIMITS.test(text);
  if (isRedisReply) return error;
  return new StorageUnavailableError(undefined, { cause: error });
}
