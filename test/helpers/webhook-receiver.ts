/**
 * Local HTTP servers for the webhook tests (Node only, node:http):
 * - `startReceiver()`: a webhook receiver that records every request and answers with the next
 *   status of a script you give it (500, 500, then 200 ...), to test signatures and retries;
 * - `startQstash()`: a stand-in for QStash's publish API that checks each request against the
 *   documented contract (POST /v2/publish/<absolute destination URL>, `Authorization: Bearer
 *   <token>`, Upstash-* headers), answers 201 `{"messageId"}` (202 for a repeated
 *   Upstash-Deduplication-Id, as QStash does) and then delivers the body to the destination with the
 *   Upstash-Forward-* headers unprefixed, `Upstash-Message-Id` and `Upstash-Retried: 0`, as QStash does;
 * - `startGate()`: a receiver that holds a delivery open until the test releases it, to act (delete
 *   a webhook, create it again) while an attempt is in flight.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";

export interface Received {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") out[k] = v;
  return out;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((ok) => server.close(() => ok()));
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Statuses to answer, in order; after the last, 200. */
  respondWith(...statuses: number[]): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  let script: number[] = [];
  const server = createServer((req, res) => {
    void readBody(req).then((body) => {
      received.push({ method: req.method ?? "", path: req.url ?? "", headers: headersOf(req), body });
      res.writeHead(script.shift() ?? 200, { "content-type": "text/plain" }).end("ok");
    });
  });
  const url = await listen(server);
  return {
    url,
    received,
    respondWith: (...statuses) => {
      script = statuses;
    },
    close: () => close(server),
  };
}

export interface Qstash {
  url: string;
  token: string;
  /** Every publish request as received. */
  published: Received[];
  /** What was wrong with each request that broke the documented contract (empty when all were right). */
  problems: string[];
  close(): Promise<void>;
}

const DEDUP_ID = /^[A-Za-z0-9_.-]{1,256}$/;

export async function startQstash(token = "qstash-test-token"): Promise<Qstash> {
  const published: Received[] = [];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  let next = 0;
  const server = createServer((req, res) => {
    void readBody(req).then(async (body) => {
      const path = req.url ?? "";
      const headers = headersOf(req);
      published.push({ method: req.method ?? "", path, headers, body });
      const fail = (status: number, why: string) => {
        problems.push(why);
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: why }));
      };
      if (req.method !== "POST") return fail(405, `method ${req.method}`);
      if (!path.startsWith("/v2/publish/")) return fail(404, `path ${path}`);
      if (headers.authorization !== `Bearer ${token}`) return fail(401, "authorization is not 'Bearer <QSTASH_TOKEN>'");
      const destination = path.slice("/v2/publish/".length);
      if (!/^https?:\/\//.test(destination)) return fail(400, `destination '${destination}' has no protocol`);
      if (!headers["content-type"]) return fail(400, "no content-type");
      const method = headers["upstash-method"];
      if (method !== undefined && !["GET", "POST", "PUT", "DELETE", "PATCH"].includes(method))
        return fail(400, `upstash-method ${method}`);
      const retries = headers["upstash-retries"];
      if (retries !== undefined && !/^\d+$/.test(retries)) return fail(400, `upstash-retries ${retries}`);
      const dedup = headers["upstash-deduplication-id"];
      if (dedup !== undefined && !DEDUP_ID.test(dedup)) return fail(400, `upstash-deduplication-id ${dedup}`);
      for (const name of Object.keys(headers)) {
        if (
          name.startsWith("upstash-") &&
          !name.startsWith("upstash-forward-") &&
          !["upstash-method", "upstash-retries", "upstash-deduplication-id"].includes(name)
        ) {
          return fail(400, `unexpected header ${name}`);
        }
      }
      const existing = dedup === undefined ? undefined : seen.get(dedup);
      if (existing) {
        res
          .writeHead(202, { "content-type": "application/json" })
          .end(JSON.stringify({ messageId: existing, deduplicated: true }));
        return;
      }
      const messageId = `msg_${++next}`;
      if (dedup !== undefined) seen.set(dedup, messageId);
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ messageId }));
      const forwarded: Record<string, string> = {
        "content-type": headers["content-type"],
        "user-agent": "Upstash-QStash",
        "upstash-message-id": messageId,
        "upstash-retried": "0",
      };
      for (const [name, value] of Object.entries(headers))
        if (name.startsWith("upstash-forward-")) forwarded[name.slice("upstash-forward-".length)] = value;
      await fetch(destination, { method: method ?? "POST", headers: forwarded, body }).catch(() => undefined);
    });
  });
  const url = await listen(server);
  return { url, token, published, problems, close: () => close(server) };
}

export interface Gate {
  /** The gate's delivery URL (`/gate`). */
  url: string;
  /** Whether a delivery has reached the gate (it is held open until `release`). */
  readonly arrived: boolean;
  /** Answers the held delivery with `status`; before one arrives, does nothing. */
  release(status: number): void;
  close(): Promise<void>;
}

export async function startGate(): Promise<Gate> {
  let release: (status: number) => void = () => undefined;
  let arrived = false;
  const server = createServer((req, res) => {
    arrived = true;
    req.resume();
    release = (status) => res.writeHead(status).end();
  });
  const url = `${await listen(server)}/gate`;
  return {
    url,
    get arrived() {
      return arrived;
    },
    release: (status) => release(status),
    close: () => close(server),
  };
}

/** Waits until `check()` is true (the QStash stand-in delivers after it answers). */
export async function eventually(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((ok) => setTimeout(ok, 10));
  }
}

/**
 * A receiver started before the tests of the file or describe this is called in and closed after
 * them (the beforeAll/afterAll pair each webhook test file had).
 */
export function receiverForTests(): Receiver {
  let started: Receiver | undefined;
  beforeAll(async () => {
    started = await startReceiver();
  });
  afterAll(async () => {
    await started?.close();
  });
  const live = () => {
    if (!started) throw new Error("the receiver starts in beforeAll");
    return started;
  };
  return {
    get url() {
      return live().url;
    },
    get received() {
      return live().received;
    },
    respondWith: (...statuses) => live().respondWith(...statuses),
    close: () => live().close(),
  };
}

/** A stand-in QStash started before the tests of the file or describe this is called in, closed after them. */
export function qstashForTests(): Qstash {
  let started: Qstash | undefined;
  beforeAll(async () => {
    started = await startQstash();
  });
  afterAll(async () => {
    await started?.close();
  });
  const live = () => {
    if (!started) throw new Error("the stand-in QStash starts in beforeAll");
    return started;
  };
  return {
    get url() {
      return live().url;
    },
    get token() {
      return live().token;
    },
    get published() {
      return live().published;
    },
    get problems() {
      return live().problems;
    },
    close: () => live().close(),
  };
}
