// @ts-check
// The page's reads of the API, with the stored read key.
import { refreshMs, state } from "./state.browser.js";

const REQUEST_TIMEOUT_MS = 10000;

/** @typedef {import("./types").ErrorKind} ErrorKind */

export class ApiError extends Error {
  /**
   * @param {ErrorKind} kind
   * @param {number} status 0 when no HTTP answer came
   * @param {string} message
   * @param {string} path
   * @param {number} [retryAfter] seconds a 429's Retry-After asks to wait
   */
  constructor(kind, status, message, path, retryAfter) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.path = path;
    this.retryAfter = retryAfter || 0;
  }
}

/**
 * @param {number} status
 * @returns {ErrorKind}
 */
function kindOf(status) {
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "missing";
  if (status === 503) return "storage";
  if (status === 429) return "busy";
  if (status >= 500) return "server";
  return "bad";
}

/** @typedef {import("./types").Answer} Answer */

// fetch's no-store keeps answers out of the browser's cache; max-age still lets the Worker's edge cache
// (trending) answer if no older than one refresh (else the browser sends no-cache).
// x-edgestats-client: the API refuses admin keys on the dashboard's requests (403).
/**
 * @param {string} accept
 * @returns {Record<string, string>}
 */
export function apiHeaders(accept) {
  return {
    authorization: "Bearer " + state.key,
    accept,
    "cache-control": "max-age=" + Math.round(refreshMs / 1000),
    "x-edgestats-client": "dashboard",
  };
}

// A failure (no answer, non-2xx) becomes an ApiError with the API's own message.
/**
 * @template T
 * @param {string} path
 * @param {string} accept
 * @param {(res: Response) => Promise<T>} read reads a 2xx answer
 * @returns {Promise<T>}
 */
async function request(path, accept, read) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
  try {
    let res;
    try {
      res = await fetch(path, { headers: apiHeaders(accept), cache: "no-store", signal: controller.signal });
    } catch {
      const why = controller.signal.aborted
        ? "no answer within " + REQUEST_TIMEOUT_MS / 1000 + " s"
        : "the network request failed";
      throw new ApiError("unreachable", 0, why, path);
    }
    if (!res.ok) {
      let body;
      try {
        body = await res.json();
      } catch {
        body = null;
      }
      const message = body && body.error && body.error.message ? body.error.message : "HTTP " + res.status;
      const wait = Number(res.headers.get("retry-after"));
      throw new ApiError(kindOf(res.status), res.status, message, path, wait > 0 ? wait : 0);
    }
    return await read(res);
  } finally {
    clearTimeout(timer);
  }
}

// The Date header stands in for generatedAt where an endpoint has none: it is the server's clock.
/**
 * @param {string} path
 * @returns {Promise<Answer>}
 */
export function getJson(path) {
  return request(path, "application/json", async (res) => {
    let body;
    try {
      body = await res.json();
    } catch {
      body = null;
    }
    if (!body || typeof body !== "object") throw new ApiError("server", res.status, "the answer was not JSON", path);
    const date = Date.parse(res.headers.get("date") || "");
    return { body, receivedAt: Number.isFinite(date) ? date : Date.now() };
  });
}

/**
 * @param {string} path
 * @returns {Promise<{ blob: Blob, filename: string }>}
 */
export function getCsv(path) {
  return request(path, "text/csv", async (res) => {
    const named = /filename="([^"]+)"/.exec(res.headers.get("content-disposition") || "");
    return { blob: await res.blob(), filename: named && named[1] ? named[1] : "edgestats.csv" };
  });
}
