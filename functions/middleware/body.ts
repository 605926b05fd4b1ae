import { createMiddleware } from "./define.ts";
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from "../../src/errors.ts";
import type { AppEnv } from "../types.ts";

/** Largest request body accepted. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Deepest JSON nesting accepted; our bodies are at most 3 levels deep. */
const MAX_DEPTH = 16;

/**
 * The source of a regular expression matching `word` in any letter case, as the `i` flag would
 * (without `u`, `i` matches an ASCII letter only by its other ASCII case), for expressions that
 * run on every cold isolate's first request: V8 sets up ICU's case folding for the first
 * case-insensitive expression with letters it compiles (~0.25 ms of CPU), and these need none.
 */
export function anyCase(word: string): string {
  return word.replace(/[A-Za-z]/g, (ch) => `[${ch.toLowerCase()}${ch.toUpperCase()}]`);
}

/** A JSON media type (`application/json`, `application/problem+json`, parameters after `;`), in any case. */
const JSON_TYPE = new RegExp(`^${anyCase("application")}\\/([A-Za-z0-9.+-]*\\+)?${anyCase("json")}\\s*(;|$)`);

/**
 * 413 for a POST/PUT/PATCH whose declared Content-Length is over MAX_BODY_BYTES: decided from the
 * header alone, so ./request.ts `headerGuard` makes it before the rate limiter's Redis call, and
 * the body guard below again for the routes that guard does not cover (/internal).
 */
export function refuseDeclaredOversize(method: string, contentLength: string | undefined): void {
  if ((method === "POST" || method === "PUT" || method === "PATCH") && Number(contentLength ?? "0") > MAX_BODY_BYTES)
    throw new PayloadTooLargeError(MAX_BODY_BYTES);
}

/** Reads a body as UTF-8 text, refusing (413) past MAX_BODY_BYTES while reading. */
export async function readLimited(req: { body: ReadableStream<Uint8Array> | null }): Promise<string> {
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      throw new PayloadTooLargeError(MAX_BODY_BYTES);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(all);
  } catch {
    throw new ValidationError("The body is not valid UTF-8.", undefined, "malformed_json");
  }
}

function tooDeep(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") {
      if (++depth > MAX_DEPTH) return true;
    } else if (ch === "}" || ch === "]") depth--;
  }
  return false;
}

/**
 * For bodies of POST/PUT/PATCH: 413 over 1 MiB (checked while reading, not
 * trusting Content-Length), 415 unless JSON, 400 for malformed or absurdly
 * nested JSON. The text is kept on the request (Hono's body cache) so the zod
 * validator parses the same bytes. A body may be empty only where a route allows it.
 */
export const jsonBodyGuard = createMiddleware<AppEnv>(async (c, next) => {
  if (!["POST", "PUT", "PATCH"].includes(c.req.method)) return next();
  refuseDeclaredOversize(c.req.method, c.req.header("content-length"));
  // Read once, without a copy: the text becomes Hono's cached body, which the idempotency
  // fingerprint (`c.req.text()`) reads from then on, beside the value parsed below,
  // so nothing reads the stream again. (A clone tees the stream: every byte passes through two
  // more streams, which cost a cold isolate's first write and every write after it.)
  const text = await readLimited(c.req.raw);
  // Hono keeps each body reading's promise there (its type says the value).
  (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(text);
  // An empty body is no body, whatever its Content-Type says: the route's JSON validator takes it so
  // (functions/route-validators.ts `jsonValidator`).
  if (text.length === 0) return next();
  const type = c.req.header("content-type") ?? "";
  if (!JSON_TYPE.test(type)) throw new UnsupportedMediaTypeError();
  if (tooDeep(text))
    throw new ValidationError(`The JSON body is nested deeper than ${MAX_DEPTH} levels.`, undefined, "malformed_json");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ValidationError("The body is not valid JSON.", undefined, "malformed_json");
  }
  // Parsed once: the route's validator and the idempotency digest take this value, and neither
  // changes it (zod and the prechecks build new objects). (Hono's `c.req.json()` parses again.)
  c.set("body", value);
  await next();
});
