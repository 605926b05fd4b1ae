/**
 * One attempt of `edgestats/client` (./client.ts) over `fetch`: the request (the same on every
 * attempt of a call) and its whole answer under one deadline, resolving to the result or rejecting
 * with the EdgestatsError it comes to. What is retried, and how long the client waits in between,
 * is ./client.ts's.
 */
import {
  badParam,
  dotSegment,
  errorOf,
  invalidResponse,
  networkError,
  ReplaySummarisedError,
} from "./client-errors.ts";
import type { AsyncWriteOptions, CsvPage, Query, ReadOptions } from "./client-types.ts";
import { NAME_PATTERN, NAME_RULE } from "./names.ts";

/** The path parameters that are names (API.md's name rule); the others (member, id, job) are any non-empty text. */
const NAME_PARAMS = new Set(["stream", "counter", "histogram", "room", "board", "player", "name"]);

/** The most of an error answer's body read (an envelope is small; a proxy's page need not be). */
const MAX_ERROR_BODY = 1 << 20;

/**
 * A call's request, the same on every attempt: its URL (path parameters encoded, a dot segment
 * refused), its path for messages, and its method, headers and body. A POST or PUT carries one
 * Idempotency-Key for the call, the same on every retry: the service answers a repeat with the
 * first response.
 */
export function requestOf(
  target: { base: string; key: string },
  [method, template]: readonly [string, string],
  params: Record<string, string>,
  query: Query | undefined,
  body: unknown,
  call: (AsyncWriteOptions & ReadOptions) | undefined,
): { url: string; path: string; init: RequestInit & { method: string; headers: Record<string, string> } } {
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name] ?? "";
    // An empty segment, or a name the route refuses, may be another route's path: "" made
    // GET /v1/presence/ (the room list) and "_total" GET /v1/presence/_total (the site total),
    // each resolved as the room's stats (review 25). Refused here as the route refuses it.
    if (value === "") throw badParam(name, "must not be empty");
    // URL parsing resolves "." and ".." (and %2e%2e) as dot segments: removeMember(c, "..") would
    // send DELETE /v1/counters/c/, the counter's own path. Such an id cannot travel in a path.
    if (value === "." || value === "..") throw dotSegment(name, value);
    if (NAME_PARAMS.has(name) && !NAME_PATTERN.test(value)) throw badParam(name, NAME_RULE);
    return encodeURIComponent(value);
  });
  const search = new URLSearchParams();
  // null as undefined: a pass hands the last page's `nextCursor: null` back as `cursor` (review 25)
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null) search.set(k, String(v));
  const qs = search.toString();
  const headers: Record<string, string> = {
    authorization: `Bearer ${target.key}`,
    accept: call?.format === "csv" ? "text/csv" : "application/json",
  };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method === "POST" || method === "PUT") headers["idempotency-key"] = call?.idempotencyKey ?? crypto.randomUUID();
  if (call?.respondAsync) headers.prefer = "respond-async";
  const init = { method, headers, body: body === undefined ? null : JSON.stringify(body) };
  return { url: `${target.base}${path}${qs ? `?${qs}` : ""}`, path, init };
}

/**
 * One attempt: the request and its whole answer under one deadline of `timeoutMs` (the fetch and
 * the body: a body that stalled after its headers held the call for ever, review 18), resolving
 * to the result or rejecting with the EdgestatsError it comes to.
 */
export async function exchange<T>(
  doFetch: (request: Request) => Promise<Response>,
  timeoutMs: number,
  url: string,
  init: RequestInit & { method: string },
  path: string,
  call?: ReadOptions,
): Promise<T> {
  const { method } = init;
  // the caller's signal (CallOptions) aborts the attempt as the deadline does; ./client.ts tells the two apart
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = call?.signal ? AbortSignal.any([deadline, call.signal]) : deadline;
  let response: Response;
  try {
    response = await untilAborted(doFetch(new Request(url, { ...init, signal })), signal);
    // a `fetch` of the caller's that resolves to no Response (a wrapper not returning it): a
    // network error, not a bare TypeError further down (review 21)
    if (typeof response?.status !== "number") throw new TypeError("fetch resolved to no Response");
  } catch (cause) {
    throw networkError(`${method} ${path} got no response`, cause);
  }
  const { status } = response;
  // a body cut short or past the deadline is no whole answer (status 0, retried where safe), not a malformed one
  const text = () =>
    bodyText(response, signal).catch((cause: unknown) => {
      throw networkError(`${method} ${path} answered ${status}, but its body did not arrive whole`, cause);
    });
  // an error answer keeps its status even when its body did not arrive whole (a 4xx is not retried)
  if (!response.ok)
    throw errorOf(response, await bodyText(response, signal, MAX_ERROR_BODY).catch(() => ""), method, path);
  if (status === 204) return discard(response) as T;
  if (call?.format === "csv") {
    if (!response.headers.get("content-type")?.startsWith("text/csv")) {
      discard(response);
      throw invalidResponse(status, method, path, "CSV");
    }
    const csv = await text();
    return (call.paging ? csvPage(csv, response.headers) : csv) as T;
  }
  const raw = await text();
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (cause) {
    // a 2xx read whole that is not JSON (a proxy's page) is the service's error, not a bare SyntaxError
    throw invalidResponse(status, method, path, "JSON", cause);
  }
  if (response.headers.get("idempotent-summarised") === "true")
    throw new ReplaySummarisedError((json as { summary: ReplaySummarisedError["summary"] }).summary);
  return json as T;
}

/** The CSV text with what its headers say of paging (functions/csv.ts, pagingHeaders). */
function csvPage(csv: string, headers: Headers): CsvPage {
  const total = headers.get("x-total-count");
  const link = /<([^>]*)>\s*;\s*rel="?next"?/.exec(headers.get("link") ?? "")?.[1];
  const next: Record<string, string> = {};
  // forEach, not Object.fromEntries: the package's types are built with the DOM lib alone (no DOM.Iterable)
  if (link !== undefined) new URL(link, "http://x").searchParams.forEach((value, name) => (next[name] = value));
  return { csv, total: total === null ? null : Number(total), next: link === undefined ? null : next };
}

/**
 * `pending` (an attempt's fetch), or the signal's reason once it aborts. The signal also travels in
 * the Request, which a `fetch` honouring it cancels; one that ignores it (a wrapper building its own
 * request, a service binding) left the attempt waiting as long as it took (review 17), and its late
 * answer open, unread (review 18): that answer's body is cancelled, which closes its connection.
 */
function untilAborted(pending: Promise<Response>, signal: AbortSignal): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) abort();
    else signal.addEventListener("abort", abort, { once: true });
    void pending
      .then((response) => (signal.aborted ? discard(response) : resolve(response)), reject)
      .finally(() => signal.removeEventListener("abort", abort));
  });
}

/** Resolves after `ms`, or rejects with `signal`'s reason once it aborts (the wait before a retry). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/** Drops an answer unread: cancels its body, so its connection is closed rather than left streaming. */
function discard(response: Response): void {
  response.body?.cancel().catch(() => undefined);
}

/**
 * The body's text, read under the attempt's deadline `signal`, at most `limit` bytes (the rest
 * cancelled unread). Through a reader of its own: `response.text()` ends only when the body does,
 * and locks it, so a body that stalls or trickles (headers came, the body never ends) held the call
 * for ever with a `fetch` that ignores the signal, and could not be cancelled (review 18). Once the
 * signal aborts, the reader cancels the body (closing its connection, whichever `fetch` made it) and
 * this rejects with the signal's reason; a body cut short rejects with the stream's error.
 */
async function bodyText(response: Response, signal: AbortSignal, limit = Infinity): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const cancel = () => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener("abort", cancel, { once: true });
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  try {
    for (;;) {
      if (signal.aborted) cancel();
      // a read pending when the body is cancelled ends as `done`: the signal tells the two apart
      const { done, value } = await reader.read();
      if (signal.aborted) throw signal.reason;
      if (done) return text + decoder.decode();
      bytes += value.byteLength;
      text += decoder.decode(value, { stream: true });
      if (bytes >= limit) {
        void reader.cancel().catch(() => undefined);
        return text;
      }
    }
  } finally {
    signal.removeEventListener("abort", cancel);
  }
}
