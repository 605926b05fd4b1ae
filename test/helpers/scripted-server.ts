import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";

/**
 * A real HTTP server (node:http, a free loopback port) for one test file, whose `handle` scripts
 * each answer: the files' stand-in for Upstash, or for the Worker, between a client and the real
 * thing (faults on real sockets, never a mocked fetch). Started in `beforeAll`; `afterAll` closes
 * its connections first, as a test may leave a stalled answer open. A handler that throws drops
 * the connection, as a server that fails mid-answer would.
 */
export function scriptedServer(handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>): {
  /** `http://127.0.0.1:<port>`, set once `beforeAll` has run. */
  readonly url: string;
} {
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  const state = { url: "" };
  beforeAll(async () => {
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  });
  return state;
}

/** The body a scripted server received, whole. */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Sends an Upstash REST request a scripted server received on to the real (local) Upstash server. */
export function forwardToUpstash(upstashUrl: string, req: IncomingMessage, body: Buffer | string): Promise<Response> {
  return fetch(`${upstashUrl}${req.url ?? "/"}`, {
    method: "POST",
    headers: { authorization: req.headers.authorization ?? "", "content-type": "application/json" },
    body: typeof body === "string" ? body : new Uint8Array(body),
  });
}

/** A request a scripted server received, as the client files record it. */
export interface Arrival {
  method: string;
  path: string;
  /** Its Idempotency-Key header. */
  key: string | undefined;
  /** performance.now() when it arrived. */
  at: number;
  /** The client closed the connection before the answer ended. */
  closedEarly?: boolean;
}

/** `req` as an Arrival, whose `closedEarly` is set if the client closes `res`'s connection before the answer ends. */
export function arrivalOf(req: IncomingMessage, res: ServerResponse): Arrival {
  const arrival: Arrival = {
    method: req.method ?? "",
    path: req.url ?? "",
    key: req.headers["idempotency-key"] as string | undefined,
    at: performance.now(),
  };
  res.on("close", () => {
    if (!res.writableFinished) arrival.closedEarly = true;
  });
  return arrival;
}
