/**
 * dev/wrangler.ts against a port that is taken: wrangler exits with "Address already in use", which
 * `startWranglerDev` tells apart from other failures and retries (the race `freePort()` leaves open
 * between finding a port and wrangler binding it). Here the caller's own port stays taken, so every
 * start fails the same way and the error says how many were made.
 */
import { createServer } from "node:net";
import { afterAll, expect, it } from "vitest";
import { listenOnLoopback } from "../../dev/redis.ts";
import { startWranglerDev } from "../../dev/wrangler.ts";

// Accepts and drops every connection, so the readiness poll fails at once instead of hanging.
const squatter = createServer((socket) => socket.destroy());
afterAll(() => new Promise<void>((ok) => squatter.close(() => ok())));

it("a start that finds its port taken is retried, and reported after the third", async () => {
  const port = await listenOnLoopback(squatter);
  const started = startWranglerDev({ vars: {}, port, readyWhen: "up", readyTimeoutMs: 60_000 });
  await expect(started).rejects.toThrow(/^3 starts found a port taken\. The last one: wrangler dev did not answer/);
  await expect(started).rejects.toThrow(/Address already in use/i);
}, 150_000);
