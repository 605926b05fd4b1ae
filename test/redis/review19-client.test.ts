/**
 * Review 19: `edgestats/client`'s per-call `signal` (CallOptions) against the real Worker under
 * `wrangler dev` (bundled once, served with --no-bundle, as test/redis/client.test.ts runs it) on
 * the local Upstash server, with a real HTTP server on real sockets (test/helpers/scripted-server.ts)
 * in between that forwards to the Worker, or holds its answer (stalls), or answers 503 with a
 * Retry-After. What is pinned: an aborted call rejects with EdgestatsError `aborted` (status 0, the
 * signal's reason as `cause`), at once, and is never retried; aborted before it starts it sends
 * nothing; aborted mid-answer its connection is closed, whether or not `fetch` honours the signal;
 * aborted while it waits to retry it sends no retry; a write aborted after it was applied is learnt
 * by repeating it with its Idempotency-Key, counted once.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { beforeEach, describe, expect, it } from "vitest";
import { createClient, EdgestatsError, type ClientOptions } from "../../src/client.ts";
import { libraryTest } from "../helpers/library.ts";
import { arrivalOf, readBody, scriptedServer, type Arrival } from "../helpers/scripted-server.ts";
import { failure, within } from "../helpers/settled.ts";
import { bundledDev, sleep, workerVars } from "../helpers/wrangler-dev.ts";

const { target, prefix } = libraryTest("review19client");
const KEYS = { ingest: "r19client-ingest-key-1", read: "r19client-read-key-001", admin: "r19client-admin-key-01" };
const worker = bundledDev(workerVars(target, KEYS, prefix, { TRENDING_CACHE_SECONDS: "0" }));

type Action =
  /** To the Worker, and its answer back as it is. */
  | { kind: "forward" }
  /** The Worker's answer (so a write is applied), then only its headers (`headers`) or nothing at all, held open. */
  | { kind: "stall"; headers: boolean }
  /** This answer, without forwarding. */
  | { kind: "reply"; status: number; body: string; headers?: Record<string, string> };

let plan: (index: number) => Action = () => ({ kind: "forward" });
let arrivals: Arrival[] = [];

/** The request as the Worker gets it, and its answer read whole. */
async function viaWorker(req: IncomingMessage, body: Buffer) {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers))
    if (typeof value === "string" && name !== "host" && name !== "connection") headers.set(name, value);
  const res = await fetch(`${worker.url}${req.url ?? "/"}`, {
    method: req.method,
    headers,
    ...(body.length > 0 ? { body: new Uint8Array(body) } : {}),
  });
  return {
    status: res.status,
    contentType: res.headers.get("content-type"),
    body: Buffer.from(await res.arrayBuffer()),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  const arrival = arrivalOf(req, res);
  arrivals.push(arrival);
  const action = plan(arrivals.length - 1);
  if (action.kind === "reply") {
    res.writeHead(action.status, { "content-type": "application/json", ...action.headers }).end(action.body);
    return;
  }
  const up = await viaWorker(req, body);
  if (action.kind === "stall") {
    // the answer is held: with its headers and half its body sent, or before anything is
    if (action.headers) {
      res.writeHead(up.status, { "content-type": up.contentType ?? "application/json" });
      res.write(up.body.subarray(0, Math.ceil(up.body.length / 2)));
    }
    return;
  }
  res.writeHead(up.status, { "content-type": up.contentType ?? "application/json" }).end(up.body);
}

const front = scriptedServer(handle);

beforeEach(() => {
  plan = () => ({ kind: "forward" });
  arrivals = [];
});

/** The client through the front server; retries on, long deadlines, so only the signal can end a call early. */
const viaFront = (options: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: front.url, key: KEYS.admin, backoffMs: () => 0, timeoutMs: 20_000, ...options });
/** The client on the Worker itself, to read what a call left behind. */
const direct = () => createClient({ baseUrl: worker.url, key: KEYS.admin, retries: 0 });

/** A `fetch` that ignores the Request's signal (a wrapper building its own request, a service binding). */
const deaf: ClientOptions["fetch"] = (request) =>
  fetch(request.url, { method: request.method, headers: request.headers });

/** `error` is the client's abort: EdgestatsError `aborted`, status 0, `reason` its cause. */
function expectAborted(error: unknown, reason?: unknown) {
  expect(error).toBeInstanceOf(EdgestatsError);
  const e = error as EdgestatsError;
  expect({ status: e.status, code: e.code }).toEqual({ status: 0, code: "aborted" });
  if (reason !== undefined) expect(e.cause).toBe(reason);
  else expect((e.cause as Error).name).toBe("AbortError");
}

/** Aborts `controller` after `ms`, and says when it did. */
function abortAfter(controller: AbortController, ms: number, reason?: unknown): { at: () => number } {
  let at = Infinity;
  setTimeout(() => {
    at = performance.now();
    controller.abort(reason);
  }, ms);
  return { at: () => at };
}

describe("a call's signal aborted before the call: nothing is sent", () => {
  it("a write with an aborted signal rejects `aborted` and the Worker never sees it", async () => {
    const controller = new AbortController();
    const reason = new Error("the page was closed");
    controller.abort(reason);
    const error = await within(
      1000,
      failure(viaFront().counters.incr("r19-before", { member: "a" }, { signal: controller.signal })),
    );
    expectAborted(error, reason);
    expect(arrivals).toEqual([]);
    expect((await failure(direct().counters.member("r19-before", "a"))) as EdgestatsError).toMatchObject({
      status: 404,
    });
  });

  it("every kind of call takes it: a read with read options, a call with none, a DELETE", async () => {
    const signal = AbortSignal.abort();
    const api = viaFront();
    for (const call of [
      api.trending.top("r19-none", { n: 3 }, { signal, format: "csv" }),
      api.counters.member("r19-none", "a", {}, { signal }),
      api.health({ signal }),
      api.leaderboards.delete("r19-none", { signal }),
    ])
      expectAborted(await within(1000, failure(call)));
    expect(arrivals).toEqual([]);
  });
});

describe("a call's signal aborted mid-answer: rejected at once, its connection closed, not retried", () => {
  it("a read whose body stalls after its headers: `aborted` within the abort's moment, one attempt", async () => {
    await direct().counters.incr("r19-stall", { member: "a", by: 2 });
    plan = () => ({ kind: "stall", headers: true });
    const controller = new AbortController();
    const abort = abortAfter(controller, 300);
    const error = await within(
      3000,
      failure(viaFront({ retries: 3 }).counters.top("r19-stall", {}, { signal: controller.signal })),
    );
    expect(performance.now() - abort.at()).toBeLessThan(500);
    expectAborted(error);
    await sleep(200);
    expect(arrivals).toHaveLength(1);
    expect(arrivals[0]!.closedEarly).toBe(true);
  });

  it("the same with a `fetch` that ignores the Request's signal: the body is cancelled, the connection closed", async () => {
    plan = () => ({ kind: "stall", headers: true });
    const controller = new AbortController();
    abortAfter(controller, 300);
    const error = await within(3000, failure(viaFront({ fetch: deaf }).trending.list({ signal: controller.signal })));
    expectAborted(error);
    await sleep(200);
    expect(arrivals).toHaveLength(1);
    expect(arrivals[0]!.closedEarly).toBe(true);
  });

  it("a write applied but held before its headers: `aborted`; repeated with its key, replayed, counted once", async () => {
    plan = (i) => (i === 0 ? { kind: "stall", headers: false } : { kind: "forward" });
    const controller = new AbortController();
    abortAfter(controller, 500);
    const key = crypto.randomUUID();
    const api = viaFront();
    const error = await within(
      3000,
      failure(
        api.counters.incr("r19-held", { member: "a", by: 5 }, { idempotencyKey: key, signal: controller.signal }),
      ),
    );
    expectAborted(error);
    expect(arrivals).toHaveLength(1);
    // applied by the Worker before the answer was held: the repeat is the first answer, not a second increment
    expect(await api.counters.incr("r19-held", { member: "a", by: 5 }, { idempotencyKey: key })).toEqual({
      results: [{ member: "a", score: 5 }],
    });
    expect(await direct().counters.member("r19-held", "a")).toMatchObject({ member: "a", score: 5 });
    expect(arrivals.map((a) => a.key)).toEqual([key, key]);
  });

  it("an abort after the call resolved changes nothing", async () => {
    const controller = new AbortController();
    const result = await viaFront().counters.incr("r19-after", { member: "a" }, { signal: controller.signal });
    controller.abort();
    expect(result).toEqual({ results: [{ member: "a", score: 1 }] });
    expect(await direct().counters.member("r19-after", "a")).toMatchObject({ score: 1 });
  });
});

describe("a call's signal aborted while it waits to retry: no retry is sent", () => {
  const unavailable = JSON.stringify({ error: { code: "storage_unavailable", message: "Try again." } });

  it("a GET answered 503 with Retry-After: 5 rejects `aborted` at the abort, not after the wait", async () => {
    plan = (i) =>
      i === 0
        ? { kind: "reply", status: 503, body: unavailable, headers: { "retry-after": "5" } }
        : { kind: "forward" };
    const controller = new AbortController();
    const abort = abortAfter(controller, 300);
    const error = await within(3000, failure(viaFront().trending.list({ signal: controller.signal })));
    expect(performance.now() - abort.at()).toBeLessThan(500);
    expectAborted(error);
    await sleep(300);
    expect(arrivals).toHaveLength(1);
  });

  it("a write in its backoff after a 502: `aborted`, one attempt, nothing applied", async () => {
    plan = (i) => (i === 0 ? { kind: "reply", status: 502, body: "<html>bad gateway</html>" } : { kind: "forward" });
    const controller = new AbortController();
    const reason = new Error("shutting down");
    abortAfter(controller, 300, reason);
    const error = await within(
      3000,
      failure(
        viaFront({ backoffMs: () => 2000 }).counters.incr(
          "r19-backoff",
          { member: "a" },
          { signal: controller.signal },
        ),
      ),
    );
    expectAborted(error, reason);
    await sleep(300);
    expect(arrivals).toHaveLength(1);
    expect((await failure(direct().counters.member("r19-backoff", "a"))) as EdgestatsError).toMatchObject({
      status: 404,
    });
  });

  it("without a signal the same 503 is retried after its Retry-After (the abort is what stopped it)", async () => {
    plan = (i) =>
      i === 0
        ? { kind: "reply", status: 503, body: unavailable, headers: { "retry-after": "1" } }
        : { kind: "forward" };
    expect(await within(5000, viaFront().trending.list())).toEqual({ streams: expect.any(Array), nextCursor: null });
    expect(arrivals).toHaveLength(2);
  });
});
