import type { RouteConfig } from "@hono/zod-openapi";
import type { Context, Handler } from "hono";
import { HTTPException } from "hono/http-exception";
import { UnsupportedMediaTypeError } from "../src/errors.ts";
import { anyCase } from "./middleware/body.ts";
import { validationHook } from "./router.ts";
import type { AppEnv } from "./types.ts";

/**
 * The request validators a lazy route (./lazy-route.ts `handlersOf`) runs before its handler:
 * @hono/zod-openapi's and Hono's, written out for the request parts our routes have. A module of
 * its own, moved as it was out of ./lazy-route.ts (which was past ~400 lines): what runs a
 * request's validation, apart from how a route is registered and its schemas built.
 */

type Target = "query" | "param" | "json";
type SafeParse = { safeParseAsync(value: unknown): Promise<{ success: boolean; data?: unknown; error?: unknown }> };

/**
 * What @hono/zod-openapi 1.x's `openapi` registers for a request of a query, path parameters and
 * a JSON body (required or not), in its order: the query's validator, the parameters', then the
 * media-type gate and the body's; `undefined` for a request with anything else (headers,
 * cookies, other media types), which `handlersOf` leaves to the library. Each validator is
 * @hono/zod-validator's `zValidator(target, schema, validationHook)`: Hono's `validator` around
 * `safeParseAsync` and the hook (which throws our 400 on a failure).
 */
export function validatorsOf(request: RouteConfig["request"]): Handler<AppEnv>[] | undefined {
  if (!request) return [];
  const { query, params, headers, cookies, body, ...rest } = request as Record<string, unknown>;
  if (headers || cookies || Object.keys(rest).length > 0) return undefined;
  const validators: Handler<AppEnv>[] = [];
  if (query) validators.push(zodValidator("query", query as SafeParse));
  if (params) validators.push(zodValidator("param", params as SafeParse));
  const content = (body as { content?: Record<string, { schema?: unknown } | undefined> } | undefined)?.content;
  if (content) {
    const types = Object.keys(content);
    const schema = content["application/json"]?.schema;
    if (types.length !== 1 || !isZodLike(schema)) return undefined;
    const json = zodValidator("json", schema);
    validators.push(jsonMediaTypeGate);
    validators.push((body as { required?: boolean }).required ? json : optionalJson(json));
  }
  return validators;
}

/** @hono/zod-openapi's test of a zod schema (`isZod`), which a prechecked schema passes. */
function isZodLike(x: unknown): x is SafeParse {
  if (typeof x !== "object" || x === null) return false;
  const s = x as Record<string, unknown>;
  return ["parse", "safeParse", "parseAsync", "safeParseAsync"].every((m) => typeof s[m] === "function");
}

function zodValidator(target: Target, schema: SafeParse): Handler<AppEnv> {
  const validate = async (value: unknown, c: Context<AppEnv>) => {
    const result = await schema.safeParseAsync(value);
    const hookResult: unknown = await (validationHook as (r: unknown, c: unknown) => unknown)(
      { data: value, ...result, target },
      c,
    );
    if (hookResult) {
      if (hookResult instanceof Response) return hookResult;
      if (typeof hookResult === "object" && "response" in hookResult) return hookResult.response as Response;
    }
    if (!result.success) return c.json(result, 400);
    return result.data;
  };
  if (target === "json") return jsonValidator(validate);
  return partValidator(target, validate);
}

/**
 * Hono's `validator(target, validate)` (hono/validator) for the query or the path parameters: the
 * same value handed to `validate`, the same steps after it. Hono's is one function for every
 * target (with its form and cookie parsers), a chunk of its own a first request would load.
 */
function partValidator(
  target: "query" | "param",
  validate: (value: unknown, c: Context<AppEnv>) => Promise<unknown>,
): Handler<AppEnv> {
  return async (c, next) => {
    const value = target === "param" ? c.req.param() : queryOf(c.req.queries());
    const res = await validate(value, c);
    if (res instanceof Response) return res;
    c.req.addValidatedData(target, res as object);
    return await next();
  };
}

/** Hono's validator's query: each name's value, or its values when it is repeated. */
function queryOf(queries: Record<string, string[]>): Record<string, string | string[]> {
  return Object.fromEntries(Object.entries(queries).map(([k, v]) => [k, v.length === 1 ? (v[0] as string) : v]));
}

/**
 * Hono's `validator("json", validate)` (hono/validator), with its media-type test written without
 * the `i` flag (`JSON_MEDIA_TYPE`).
 */
function jsonValidator(validate: (value: unknown, c: Context<AppEnv>) => Promise<unknown>): Handler<AppEnv> {
  return async (c, next) => {
    let value: unknown = {};
    const contentType = c.req.header("Content-Type");
    // An empty body is no body, whatever its Content-Type says (clients send `application/json` with
    // a body-less PUT): an optional body is absent, a required one lists its missing fields, as for a
    // request without one. Parsing "" answered "Malformed JSON" without details (review 7).
    if (contentType && JSON_MEDIA_TYPE.test(mediaTypeOf(contentType))) {
      const text = await c.req.text();
      if (text.length > 0)
        try {
          // the body guard's parse (./middleware/body.ts) where it ran, else this one
          value = c.var.body !== undefined ? c.var.body : JSON.parse(text);
        } catch {
          throw new HTTPException(400, { message: "Malformed JSON in request body" });
        }
    }
    const res = await validate(value, c);
    if (res instanceof Response) return res;
    c.req.addValidatedData("json", res as object);
    return await next();
  };
}

/** A Content-Type's media type: before any parameter, trimmed, lowercased (RFC 9110 8.3.1). */
const mediaTypeOf = (contentType: string) => (contentType.split(";")[0] ?? "").trim().toLowerCase();
// @hono/zod-openapi's test of an optional JSON body, without the `i` flag (./middleware/body.ts `anyCase`).
const JSON_CONTENT_TYPE = new RegExp(`^${anyCase("application")}\\/([A-Za-z-.]+\\+)?${anyCase("json")}`);
/**
 * Hono's `validator` tests a JSON body's media type, lowercased, with
 * `/^application\/([\w.-]+\+)?json$/i`; on a lowercased string the flag changes nothing.
 */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/;

/**
 * The 415 gate of a route whose body is JSON only: the media type the JSON validator below reads
 * (@hono/zod-openapi's own gate also refused RFC 9110's empty or spaced parameters, `application/json;`,
 * which that validator and the body guard take), and the body guard's refusal (code
 * `unsupported_media_type`), not Hono's bare 415 (`http_error`), so one refusal has one code.
 */
const jsonMediaTypeGate: Handler<AppEnv> = async (c, next) => {
  const contentType = c.req.header("content-type");
  if (contentType) {
    if (!JSON_MEDIA_TYPE.test(mediaTypeOf(contentType))) throw new UnsupportedMediaTypeError();
  } else if (await hasRequestBody(c)) throw new UnsupportedMediaTypeError();
  await next();
};

/** A JSON body that may be left out: validated when the request says it is JSON, `{}` otherwise. */
function optionalJson(json: Handler<AppEnv>): Handler<AppEnv> {
  return async (c, next) => {
    const contentType = c.req.header("content-type");
    if (contentType && JSON_CONTENT_TYPE.test(contentType)) return await json(c, next);
    c.req.addValidatedData("json", {});
    await next();
  };
}

async function hasRequestBody(c: Context<AppEnv>): Promise<boolean> {
  const raw = c.req.raw;
  if (raw.body === null) return false;
  if (raw.bodyUsed) return (await c.req.arrayBuffer()).byteLength > 0;
  const body = raw.clone().body;
  if (body === null) return false;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return false;
      if (value.byteLength > 0) return true;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
