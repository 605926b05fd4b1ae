import { createMiddleware } from "./define.ts";
import { readConfig } from "../../src/config.ts";
import { ValidationError } from "../../src/errors.ts";
import type { AppEnv } from "../types.ts";
import { checkKeyLengths } from "./auth.ts";
import { refuseDeclaredOversize } from "./body.ts";
import { checkIdempotencyKey, readsIdempotencyKey } from "./idempotency.ts";

/**
 * Reads the config and fixes the request's time once, before any handler runs: every part of a
 * request (its keys, its buckets, its idempotency record) sees the same `now`, and a bad
 * deployment setting is a ConfigError before anything else happens.
 */
export function requestContext(now: () => number) {
  return createMiddleware<AppEnv>(async (c, next) => {
    c.set("now", now());
    c.set("config", readConfig(c.env as unknown as Record<string, unknown>));
    checkKeyLengths(c.env);
    await next();
  });
}

/**
 * Refuses a DELETE path with a trailing slash (below), and a path whose percent-escapes are not UTF-8 (`%FF`, or `%ED%A0%80`, a lone surrogate):
 * Hono keeps such a segment as the literal text, so a name or member would silently become the
 * characters "%FF" (which a client encodes as `%25FF`) and a DELETE would remove that one. 400,
 * before anything is read or written.
 */
export const pathGuard = createMiddleware<AppEnv>(async (c, next) => {
  const url = c.req.url;
  const start = url.indexOf("/", url.indexOf("://") + 3);
  const end = url.search(/[?#]/);
  const path = url.slice(start, end === -1 ? undefined : end);
  if (path.endsWith("/") || path.includes("%")) checkPath(c.req.method, path);
  await next();
});

/**
 * `pathGuard`'s refusals, for the paths that may need one: a function of its own, so that a cold
 * isolate's first request, whose path ends with no "/" and holds no "%" most often, does not
 * compile them (issue 14, point 6).
 */
function checkPath(method: string, path: string): void {
  // A DELETE's path never ends with "/": that is what an HTTP client makes of DELETE …/members/..
  // (URL parsing resolves dot segments), and the router would take it for the counter's, board's or
  // room's own path: the whole thing would go instead of one member. Both refusals are of the URL's
  // path, where the path parameters are (`in: "param"`): a DELETE's had no `in`, and was located
  // in the body (`json`) by ../errors.ts (review 25).
  if (method === "DELETE" && path.length > 1 && path.endsWith("/"))
    throw new ValidationError(
      "A DELETE path must not end with '/'; a member or id '.' or '..' cannot be addressed in a URL.",
      [{ in: "param", path: "path", message: "no trailing '/' on a DELETE" }],
    );
  if (path.includes("%")) {
    for (const segment of path.split("/")) {
      try {
        decodeURIComponent(segment);
      } catch {
        throw new ValidationError("A path segment's percent-escapes are not UTF-8; encode names as UTF-8.", [
          { in: "param", path: "path", message: "percent-escapes must encode UTF-8" },
        ]);
      }
    }
  }
}

/**
 * The refusals a request's headers alone decide: a declared Content-Length over 1 MiB (413) and a
 * malformed Idempotency-Key (400). On /v1/* after auth and before the rate limiter, so that they
 * cost no Redis call with the limiter on (they cost the limiter's EVALSHA: review 17). The body
 * guard still bounds what it reads, and ./idempotency.ts still builds the record.
 */
export const headerGuard = createMiddleware<AppEnv>(async (c, next) => {
  const method = c.req.method;
  refuseDeclaredOversize(method, c.req.header("content-length"));
  const idempotency = c.req.header("idempotency-key");
  if (idempotency !== undefined && readsIdempotencyKey(method)) checkIdempotencyKey(idempotency);
  await next();
});

/**
 * Headers every API answer (/v1/*, /internal/*, /healthz; app.ts's 404/405 set them too) carries, errors included: `nosniff` (a member that looks like HTML or
 * script stays data), and `Cache-Control: private, no-store` where the route set none. Answers are
 * per key, and a shared cache should not keep an Authorization'd answer anyway (RFC 9111 §3.5),
 * but a browser or a proxy configured to cache might; the trending edge cache sets its own
 * `private, max-age`, which stays.
 */
export const apiHeaders = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  c.header("X-Content-Type-Options", "nosniff");
  if (!c.res.headers.has("cache-control")) c.header("Cache-Control", "private, no-store");
});
