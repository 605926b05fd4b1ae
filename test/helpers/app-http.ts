/**
 * A request to the app in process (Hono's `app.request`, no workerd) with one of a test's keys:
 * the status, the body parsed as JSON (undefined when empty or not JSON) and as text, the headers.
 * For redis tests that drive the service and the library against the same prefix.
 */
import type { createApp } from "../../functions/app.ts";

export interface AppResponse {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

export function appHttp<K extends string>(app: ReturnType<typeof createApp>, keys: Record<K, string>) {
  return async function http(
    key: K,
    method: string,
    path: string,
    env: Record<string, string>,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<AppResponse> {
    const h: Record<string, string> = { authorization: `Bearer ${keys[key]}`, ...headers };
    if (body !== undefined) h["content-type"] = "application/json";
    const res = await app.request(
      path,
      { method, headers: h, ...(body === undefined ? {} : { body: JSON.stringify(body) }) },
      env,
    );
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  };
}
