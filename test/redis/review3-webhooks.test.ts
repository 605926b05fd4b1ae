/**
 * Review 3: webhook delivery against real receivers (node:http) and real Redis behind the local
 * Upstash server — the signature as a receiver following docs/webhooks.md checks it, a receiver
 * that hangs or redirects, the same event id on every retry, secrets never in the delivery log.
 */
import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MINUTE } from "../../src/time.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { startReceiver, type Receiver } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("review3-webhooks");
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const SECRET = "review3-s3cret-s3cret";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true, timeoutMs: 400 };

let receiver: Receiver;
/** Accepts the request and never answers. */
let hang: Server;
let hangUrl: string;
/** Answers 302 to elsewhere; counts requests to the target of the redirect. */
let redirect: Server;
let redirectUrl: string;
beforeAll(async () => {
  receiver = await startReceiver();
  hang = createServer(() => undefined);
  await new Promise<void>((ok) => hang.listen(0, "127.0.0.1", ok));
  hangUrl = `http://127.0.0.1:${(hang.address() as AddressInfo).port}/hook`;
  redirect = createServer((_req, res) => res.writeHead(302, { location: `${receiver.url}/redirected` }).end());
  await new Promise<void>((ok) => redirect.listen(0, "127.0.0.1", ok));
  redirectUrl = `http://127.0.0.1:${(redirect.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await receiver.close();
  for (const s of [hang, redirect]) {
    s.closeAllConnections();
    await new Promise((ok) => s.close(ok));
  }
});

const hook = (url: string): webhooks.WebhookInput => ({ url, events: ["leaderboard.leader"], secret: SECRET });
const leader = (player: string) => ({
  type: "leaderboard.leader" as const,
  subject: { kind: "board" as const, name: "b1" },
  data: { board: "b1", player },
  key: player,
});

/** docs/webhooks.md's receiver, written from the doc with node:crypto (not the project's verifier). */
function docVerify(header: string, body: string, nowSec: number): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  if (Math.abs(nowSec - Number(m[1])) > 300) return false;
  return createHmac("sha256", SECRET).update(`${m[1]}.${body}`).digest("hex") === m[2];
}

describe("signatures as the docs describe them (review 3)", () => {
  it("each attempt is signed afresh over the same body, with the same event id and delivery id", async () => {
    const ctx = lib.ctx(T0, "sig");
    await webhooks.put(ctx, "ops", hook(`${receiver.url}/sig`), direct);
    receiver.respondWith(500);
    const start = receiver.received.length;
    expect(await webhooks.emit(ctx, leader("ann"))).toMatchObject({ queued: 1 });
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ claimed: 1, retrying: 1 });
    const later = { ...ctx, now: T0 + MINUTE };
    expect(await webhooks.deliverDue(later, direct)).toMatchObject({ claimed: 1, delivered: 1 });
    const [a, b] = receiver.received.slice(start);
    expect(a && b).toBeTruthy();
    expect(b!.body).toBe(a!.body);
    expect(b!.headers["edgestats-delivery"]).toBe(a!.headers["edgestats-delivery"]);
    expect(JSON.parse(b!.body).id).toBe(JSON.parse(a!.body).id);
    expect(a!.headers["edgestats-event"]).toBe("leaderboard.leader");
    expect(docVerify(a!.headers["edgestats-signature"]!, a!.body, T0 / 1000)).toBe(true);
    expect(docVerify(b!.headers["edgestats-signature"]!, b!.body, (T0 + MINUTE) / 1000)).toBe(true);
    expect(a!.headers["edgestats-signature"]).not.toBe(b!.headers["edgestats-signature"]);
    // a replay of the first attempt past the 5-minute tolerance fails the doc's check
    expect(docVerify(a!.headers["edgestats-signature"]!, a!.body, T0 / 1000 + 301)).toBe(false);
    // a body altered by one byte fails it
    expect(docVerify(a!.headers["edgestats-signature"]!, a!.body.replace("ann", "anm"), T0 / 1000)).toBe(false);
    expect(await webhooks.verifySignature(SECRET, b!.body, b!.headers["edgestats-signature"]!, T0 + MINUTE)).toBe(true);
  });
});

describe("hostile receivers (review 3)", () => {
  it("a receiver that hangs costs one timeout and does not hold back another webhook's delivery", async () => {
    const ctx = lib.ctx(T0, "hang");
    await webhooks.put(ctx, "slow", hook(hangUrl), direct);
    await webhooks.put(ctx, "fast", hook(`${receiver.url}/fast`), direct);
    expect(await webhooks.emit(ctx, leader("bob"))).toMatchObject({ queued: 2 });
    const started = performance.now();
    const result = await webhooks.deliverDue(ctx, direct);
    const took = performance.now() - started;
    expect(result).toMatchObject({ claimed: 2, delivered: 1, retrying: 1 });
    // bounded by the delivery timeout (400 ms here), not by the receiver
    expect(took).toBeLessThan(5_000);
    expect(receiver.received.some((r) => r.path === "/fast")).toBe(true);
    const log = (await webhooks.deliveries(ctx, "slow")).deliveries;
    expect(log[0]).toMatchObject({ status: null });
    expect(String(log[0]!.error)).toMatch(/timeout|abort/i);
    expect(JSON.stringify(log)).not.toContain(SECRET);
  });

  it("a redirect is a failed attempt and is not followed", async () => {
    const ctx = lib.ctx(T0, "redirect");
    await webhooks.put(ctx, "ops", hook(redirectUrl), direct);
    expect(await webhooks.emit(ctx, leader("cy"))).toMatchObject({ queued: 1 });
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ claimed: 1, delivered: 0, retrying: 1 });
    expect(receiver.received.some((r) => r.path === "/redirected")).toBe(false);
    const log = (await webhooks.deliveries(ctx, "ops")).deliveries;
    expect(log[0]).toMatchObject({ status: 302 });
    expect(JSON.stringify(log)).not.toContain(SECRET);
  });

  it("a webhook deleted while its delivery waits for a retry is sent nothing more", async () => {
    const ctx = lib.ctx(T0, "deleted");
    await webhooks.put(ctx, "gone", hook(`${receiver.url}/gone`), direct);
    receiver.respondWith(503);
    await webhooks.emit(ctx, leader("dee"));
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ retrying: 1 });
    await webhooks.remove(ctx, "gone");
    const before = receiver.received.filter((r) => r.path === "/gone").length;
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + 2 * MINUTE }, direct)).toMatchObject({ claimed: 0 });
    expect(receiver.received.filter((r) => r.path === "/gone").length).toBe(before);
  });
});

describe("library-side URL and secret refusals (review 3)", () => {
  it.each([
    ["credentials", "https://u:p@example.com/h"],
    ["gopher scheme", "gopher://example.com/h"],
    ["2049 characters", `https://example.com/${"a".repeat(2029)}`],
  ])("%s: ValidationError, nothing written", async (_l, url) => {
    const ctx = lib.ctx(T0, "refuse");
    await expect(webhooks.put(ctx, "x", hook(url), direct)).rejects.toMatchObject({ code: "invalid_request" });
    expect((await webhooks.list(ctx)).webhooks).toEqual([]);
  });

  it(
    // FIXED (was low): see test/worker/review3-abuse.test.ts — `localhost.` passed urlProblem.
    "https://localhost./ is refused by the library too",
    async () => {
      const ctx = lib.ctx(T0, "refuse-dot");
      await expect(
        webhooks.put(ctx, "x", hook("https://localhost./h"), { allowLocalHttp: false }),
      ).rejects.toMatchObject({ code: "invalid_request" });
    },
  );
});
