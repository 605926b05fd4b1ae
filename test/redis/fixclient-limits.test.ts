/**
 * The Worker's Upstash client (src/redis/http.ts) at its limits, on real sockets: a request over
 * Upstash's max request size (10 MB), a reply too large to read, and one deadline for a call's
 * EVALSHA and its EVAL after NOSCRIPT (review 16's known limits).
 *
 * A scripted HTTP server of this file stands in for Upstash between the client and the local
 * Upstash server (real redis-server behind it): it forwards, and does what the local server does
 * not: it refuses a request body over 10,485,760 bytes with Upstash's own answer (HTTP 400,
 * `{"error":"ERR max request size exceeded. Limit: 10485760 bytes, Actual: <n> bytes"}`, the text
 * of upstash.com/docs/redis/troubleshooting/max_request_size_exceeded with the figures Upstash
 * adds), and, where a test says so, answers late, NOSCRIPT, or a reply that never ends. The
 * service is the real Hono app (createApp + app.request) on Node.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { PayloadTooLargeError, StorageUnavailableError } from "../../src/errors.ts";
import { createRedis } from "../../src/redis/client.ts";
import { MAX_REPLY_BYTES, MAX_REQUEST_BYTES } from "../../src/redis/http.ts";
import { defineScript } from "../../src/redis/script.ts";
import { libraryTest } from "../helpers/library.ts";
import { forwardToUpstash, readBody, scriptedServer } from "../helpers/scripted-server.ts";

const lib = libraryTest("fixclientlim");
const { target } = lib;
const KEYS = { ingest: "fixclient-ingest-key-1", read: "fixclient-read-key-001", admin: "fixclient-admin-key-01" };
const TIMEOUT_MS = 600;
const app = createApp();
const UPSTASH_LIMIT = 10 * 1024 * 1024;

type Action =
  | { kind: "forward" }
  /** Forward after `ms`. */
  | { kind: "late"; ms: number }
  /** Answer this without forwarding. */
  | { kind: "reply"; status: number; body: string; after?: number }
  /** Headers, then spaces without end (no Content-Length), until the client closes. */
  | { kind: "endless" }
  /** Headers announcing a body of this many bytes, then nothing. */
  | { kind: "announce"; bytes: number };

interface Seen {
  path: string;
  bytes: number;
  command: string;
}

let plan: (seen: Seen, index: number) => Action = () => ({ kind: "forward" });
let seen: Seen[] = [];
/** Reply body sizes (bytes) sent by the stand-in, in order. */
let replies: number[] = [];
/** Requests whose connection the client closed before the answer ended. */
let aborted = 0;

async function forward(req: IncomingMessage, body: Buffer) {
  const up = await forwardToUpstash(target.url, req, body);
  return { status: up.status, body: Buffer.from(await up.arrayBuffer()) };
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  res.on("close", () => {
    if (!res.writableFinished) aborted++;
  });
  // Upstash's limit, as it answers it (nothing reaches Redis)
  if (body.length > UPSTASH_LIMIT) {
    seen.push({ path: req.url ?? "", bytes: body.length, command: "(over the limit)" });
    res.writeHead(400, { "content-type": "application/json" }).end(
      JSON.stringify({
        error: `ERR max request size exceeded. Limit: ${UPSTASH_LIMIT} bytes, Actual: ${body.length} bytes`,
      }),
    );
    return;
  }
  const parsed = JSON.parse(body.toString("utf8")) as unknown[];
  const first = req.url === "/pipeline" ? (parsed[0] as unknown[])[0] : parsed[0];
  const one = { path: req.url ?? "", bytes: body.length, command: String(first).toLowerCase() };
  seen.push(one);
  const action = plan(one, seen.length - 1);
  const send = (status: number, out: Buffer | string) => {
    if (res.destroyed) return;
    replies.push(Buffer.byteLength(out));
    res.writeHead(status, { "content-type": "application/json" }).end(out);
  };
  switch (action.kind) {
    case "reply":
      if (action.after) await new Promise((r) => setTimeout(r, action.after));
      return send(action.status, action.body);
    case "late": {
      await new Promise((r) => setTimeout(r, action.ms));
      const up = await forward(req, body);
      return send(up.status, up.body);
    }
    case "endless": {
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      res.write('{"result":"');
      pump();
      return;
    }
    case "announce":
      res.writeHead(200, { "content-type": "application/json", "content-length": String(action.bytes) });
      res.write('{"result":"');
      return;
    default: {
      const up = await forward(req, body);
      return send(up.status, up.body);
    }
  }
}

const stub = scriptedServer(handle);

beforeEach(() => {
  plan = () => ({ kind: "forward" });
  seen = [];
  replies = [];
  aborted = 0;
});

function env() {
  return { ...lib.appEnv(KEYS, { REDIS_TIMEOUT_MS: String(TIMEOUT_MS) }), UPSTASH_REDIS_REST_URL: stub.url };
}

async function api(method: string, path: string, body?: unknown) {
  const started = performance.now();
  const res = await app.request(
    path,
    {
      method,
      headers: {
        authorization: `Bearer ${method === "GET" ? KEYS.read : KEYS.ingest}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    },
    env(),
  );
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, ms: performance.now() - started };
}

const echoLength = defineScript({
  name: "fixclient.echoLength",
  write: false,
  keys: [],
  args: ["blob"],
  lua: "return #blob",
});

const repeat = defineScript({
  name: "fixclient.repeat",
  write: false,
  keys: [],
  args: ["unit", "times"],
  lua: "return string.rep(unit, tonumber(times))",
});

const piped = defineScript({ name: "fixclient.piped", write: false, keys: [], args: [], lua: "return 1" });

describe("a request over Upstash's max request size (10 MB)", () => {
  it("the constants are Upstash's: 10,485,760 bytes", () => {
    expect(MAX_REQUEST_BYTES).toBe(UPSTASH_LIMIT);
  });

  it("one the client can tell is over (its arguments alone pass 10 MB) is refused before sending: PayloadTooLargeError, no request", async () => {
    const redis = createRedis({ url: stub.url, token: target.token, timeoutMs: 20_000 });
    const error = await echoLength
      .run(redis, {}, { blob: "x".repeat(MAX_REQUEST_BYTES + 1) })
      .catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((error as PayloadTooLargeError).code).toBe("payload_too_large");
    expect(seen).toHaveLength(0);
    // multi-byte characters count as their UTF-8 bytes: 3.5 M × "é" (2 bytes) = 7 MB is sent and runs
    expect(await echoLength.run(redis, {}, { blob: "é".repeat(3_500_000) })).toBe(7_000_000);
    // 5.3 M × "é" = 10.6 MB of arguments, under 10.49 M characters of JSON: still refused unsent
    seen = [];
    const utf8 = await echoLength.run(redis, {}, { blob: "é".repeat(5_300_000) }).catch((e: unknown) => e);
    expect(utf8).toBeInstanceOf(PayloadTooLargeError);
    expect(seen).toHaveLength(0);
  });

  it("one only Upstash can tell is over (its JSON passes 10 MB, its arguments do not) is sent; Upstash's answer is a PayloadTooLargeError", async () => {
    const redis = createRedis({ url: stub.url, token: target.token, timeoutMs: 20_000 });
    // 6 M quotes: 6 MB of argument, 12 MB of JSON (each `"` sent as `\"`)
    const error = (await echoLength.run(redis, {}, { blob: '"'.repeat(6_000_000) }).catch((e: unknown) => e)) as Error;
    expect(seen.map((s) => s.command)).toEqual(["(over the limit)"]);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect(error.message).toContain(String(UPSTASH_LIMIT));
  });

  // No legal API request reaches 10 MB (a body is at most 1 MiB, and its scripts' arguments stay
  // a few times that at most), so the stand-in answers Upstash's error to an ordinary request here:
  // what the API makes of it is the point, as a plan with a lower limit would show.
  it("through the API, Upstash's `ERR max request size exceeded` is a 413 payload_too_large envelope, not a 500", async () => {
    plan = () => ({
      kind: "reply",
      status: 400,
      body: JSON.stringify({
        error: `ERR max request size exceeded. Limit: ${UPSTASH_LIMIT} bytes, Actual: 10485800 bytes`,
      }),
    });
    const res = await api("POST", "/v1/counters/big-req/incr", { member: "m" });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
    expect(res.body.error.message).toContain(String(UPSTASH_LIMIT));
    expect(JSON.stringify(res.body)).not.toContain("10485800"); // what Upstash measured stays in the log
  });
});

describe("a reply too large to read", () => {
  it("a real reply over MAX_REPLY_BYTES (the local Upstash server sends it whole) is a StorageUnavailableError; one under it is read whole", async () => {
    const redis = createRedis({ url: target.url, token: target.token, timeoutMs: 30_000 });
    const under = (await repeat.run(redis, {}, { unit: "abcd", times: 2_000_000 })) as unknown as string;
    expect(under.length).toBe(8_000_000);
    const error = (await repeat
      .run(redis, {}, { unit: "abcd", times: MAX_REPLY_BYTES / 4 + 1 })
      .catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect(error.message).toContain(`${MAX_REPLY_BYTES} bytes`);
    expect((error.cause as Error).name).toBe("UpstashReplyTooLarge");
  });

  it("through the API, a reply that never ends: 503 storage_unavailable saying so, the connection closed, long before the timeout", async () => {
    await api("GET", "/v1/counters/big-reply/top"); // the scripts are loaded
    seen = [];
    plan = () => ({ kind: "endless" });
    // a timeout far away: what stops the reading is the byte count
    const res = await app.request(
      "/v1/counters/big-reply/top",
      { headers: { authorization: `Bearer ${KEYS.read}` } },
      { ...env(), REDIS_TIMEOUT_MS: "30000" },
    );
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(res.status).toBe(503);
    expect(body.error.code).toBe("storage_unavailable");
    expect(body.error.message).toContain(`reply passed ${MAX_REPLY_BYTES} bytes`);
    await new Promise((r) => setTimeout(r, 100));
    expect(aborted).toBe(1);
  });

  it("a reply whose Content-Length announces more is refused before reading it", async () => {
    plan = () => ({ kind: "announce", bytes: MAX_REPLY_BYTES + 1 });
    const started = performance.now();
    const res = await app.request(
      "/v1/counters/big-reply/top",
      { headers: { authorization: `Bearer ${KEYS.read}` } },
      { ...env(), REDIS_TIMEOUT_MS: "30000" },
    );
    expect(res.status).toBe(503);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  // The largest legal API reply, measured on the wire: a counter's `sorted` list is every member,
  // up to MAX_SORTED_MEMBERS (10,000), each up to 256 bytes; `"` is the member byte that grows most
  // (cjson writes `\"`, the REST reply's JSON `\\\"`: 4 bytes). MAX_REPLY_BYTES stays well above.
  it("the largest legal reply (10,000 members of 256 quote-heavy bytes, sorted by member) is read, and is well under MAX_REPLY_BYTES", async () => {
    const member = (i: number) => `${String(i).padStart(5, "0")}${'"'.repeat(251)}`;
    for (let batch = 0; batch < 10; batch++) {
      const items = Array.from({ length: 1000 }, (_, j) => ({ member: member(batch * 1000 + j), by: 1e12 }));
      expect((await api("POST", "/v1/counters/largest/incr", { items })).status).toBe(200);
    }
    replies = [];
    const res = await app.request(
      "/v1/counters/largest/sorted?by=member&order=asc",
      { headers: { authorization: `Bearer ${KEYS.read}` } },
      { ...env(), REDIS_TIMEOUT_MS: "30000" },
    );
    const body = (await res.json()) as { items: { member: string }[] };
    expect(res.status).toBe(200);
    expect(body.items).toHaveLength(10_000);
    expect(body.items[9999]?.member).toBe(member(9999));
    const largest = Math.max(...replies);
    console.log(`largest legal reply measured: ${largest} bytes (cap ${MAX_REPLY_BYTES})`);
    expect(largest).toBeGreaterThan(10_000_000);
    expect(largest * 2.5).toBeLessThan(MAX_REPLY_BYTES);
  });
});

describe("one deadline per call: EVALSHA, NOSCRIPT, then EVAL", () => {
  const noscript = JSON.stringify({ error: "NOSCRIPT No matching script. Please use EVAL." });

  it("EVALSHA answered NOSCRIPT late, then an EVAL that would answer in time on its own: 503 at REDIS_TIMEOUT_MS, not after", async () => {
    // each request takes 0.6 × the timeout: under it alone, over it together
    plan = (s) =>
      s.command === "evalsha"
        ? { kind: "reply", status: 400, body: noscript, after: TIMEOUT_MS * 0.6 }
        : { kind: "late", ms: TIMEOUT_MS * 0.6 };
    const res = await api("POST", "/v1/counters/deadline/incr", { member: "m" });
    expect(seen.map((s) => s.command)).toEqual(["evalsha", "eval"]);
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe("storage_unavailable");
    expect(res.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(res.ms).toBeLessThan(TIMEOUT_MS + 400);
  });

  it("NOSCRIPT then an EVAL that hangs: 503 within one REDIS_TIMEOUT_MS", async () => {
    plan = (s) =>
      s.command === "evalsha" ? { kind: "reply", status: 400, body: noscript } : { kind: "late", ms: 60_000 };
    const res = await api("POST", "/v1/counters/deadline/incr", { member: "m2" });
    expect(res.status).toBe(503);
    expect(res.ms).toBeLessThan(TIMEOUT_MS + 400);
  });

  it("a quick NOSCRIPT and EVAL still succeed, and the next call gets a deadline of its own", async () => {
    plan = (s) => (s.command === "evalsha" ? { kind: "reply", status: 400, body: noscript } : { kind: "forward" });
    expect((await api("POST", "/v1/counters/deadline/incr", { member: "m3", by: 2 })).status).toBe(200);
    plan = () => ({ kind: "forward" });
    expect((await api("GET", `/v1/counters/deadline/members/m3`)).status).toBe(200); // its script is loaded
    // a call after the first's deadline has passed: not aborted by it
    await new Promise((r) => setTimeout(r, TIMEOUT_MS + 100));
    plan = () => ({ kind: "late", ms: TIMEOUT_MS * 0.5 });
    const res = await api("GET", `/v1/counters/deadline/members/m3`);
    expect(res.status).toBe(200);
    expect(res.body.score).toBe(2);
  });

  it("a histogram read's pipeline re-sent after NOSCRIPT shares the deadline too", async () => {
    const redis = createRedis({ url: stub.url, token: target.token, timeoutMs: TIMEOUT_MS });
    plan = (s) =>
      s.command === "evalsha"
        ? {
            kind: "reply",
            status: 200,
            body: JSON.stringify([{ error: "NOSCRIPT No matching script." }, { result: "PONG" }]),
            after: TIMEOUT_MS * 0.6,
          }
        : { kind: "late", ms: TIMEOUT_MS * 0.6 };
    const started = performance.now();
    const out = await piped.runPiped(redis, {}, {}, (p) => p.ping()).catch((e: unknown) => e);
    expect(seen.map((s) => s.command)).toEqual(["evalsha", "eval"]);
    expect(out).toBeInstanceOf(StorageUnavailableError);
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 400);
  });
});
