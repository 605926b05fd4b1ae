/**
 * Review 16: webhook delivery against real receivers (test/helpers/webhook-receiver.ts, node:http)
 * and the QStash stand-in that checks every publish against the documented API, on real Redis, time
 * injected. The Worker-side half (the `Upstash-Signature` JWTs on /internal/*, scopes, secrets in
 * answers) is test/worker/review16-webhooks.test.ts; this half needs Node's HTTP servers:
 * - a receiver answering 410 Gone, and one answering 429/503 with `Retry-After` (both findings of
 *   this review, fixed in its second phase: 410 is final, Retry-After is honoured up to 6 hours);
 * - a slow receiver (past the delivery timeout): logged as a failure, retried, one `id`;
 * - redelivery: every attempt of one delivery carries the same event `id` and body, each attempt
 *   signed afresh; through QStash the secret never leaves (only the HMAC does).
 */
import { createServer as createHttpServer } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import { MINUTE } from "../../src/time.ts";
import { RETRY_BASE_MS, RETRY_CAP_MS } from "../../src/webhooks/deliver.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { eventually, qstashForTests, receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("review16-whd");
const T0 = Date.UTC(2026, 10, 28, 3, 0, 30);
const SECRET = "review16-secret-0123456789";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true, timeoutMs: 400 };

const receiver = receiverForTests();
const qstash = qstashForTests();

const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });
const hook = (path: string): webhooks.WebhookInput => ({
  url: `${receiver.url}${path}`,
  events: ["leaderboard.leader"],
  secret: SECRET,
});
const gotAt = (path: string) => receiver.received.filter((r) => r.path === path);

/** Puts webhook `a` at `path` and sends its test event once (the route's `send()`). */
async function firstAttempt(ctx: Ctx, path: string, settings = direct) {
  await webhooks.put(ctx, "a", hook(path), settings);
  const t = await webhooks.test(ctx, settings, "a");
  return { id: t.id, result: await t.send() };
}

describe("redelivery: one id, one body, a fresh signature each attempt", () => {
  it("a failing receiver sees the same id and body on every retry, each signed at its own time", async () => {
    const ctx = lib.ctx(T0, "redeliver");
    receiver.respondWith(500, 500);
    const { id, result } = await firstAttempt(ctx, "/redeliver");
    expect(result).toEqual({ delivered: 0, retrying: 1, failed: 0 });
    // due 1 minute after the first attempt, then 2 after the second
    expect(await webhooks.deliverDue(at(ctx, T0 + RETRY_BASE_MS - 1), direct)).toMatchObject({ claimed: 0 });
    const t1 = T0 + RETRY_BASE_MS;
    expect(await webhooks.deliverDue(at(ctx, t1), direct)).toMatchObject({ claimed: 1, retrying: 1 });
    const t2 = t1 + 2 * RETRY_BASE_MS;
    expect(await webhooks.deliverDue(at(ctx, t2), direct)).toMatchObject({ claimed: 1, delivered: 1 });
    const got = gotAt("/redeliver");
    expect(got).toHaveLength(3);
    expect(new Set(got.map((g) => g.body)).size).toBe(1);
    expect(got.map((g) => JSON.parse(g.body).id)).toEqual([id, id, id]);
    expect(got.map((g) => g.headers["edgestats-delivery"])).toEqual(
      got.map(() => got[0]!.headers["edgestats-delivery"]),
    );
    // each attempt verifies at its own time, and only there (a receiver refuses the first one replayed later)
    for (const [i, when] of [T0, t1, t2].entries()) {
      const g = got[i]!;
      expect(await webhooks.verifySignature(SECRET, g.body, g.headers["edgestats-signature"]!, when)).toBe(true);
      expect(
        await webhooks.verifySignature("another-secret-0123456789", g.body, g.headers["edgestats-signature"]!, when),
      ).toBe(false);
      expect(await webhooks.verifySignature(SECRET, `${g.body} `, g.headers["edgestats-signature"]!, when)).toBe(false);
    }
    // replayed past the receiver's 300 s tolerance
    const late = T0 + 301_000;
    expect(await webhooks.verifySignature(SECRET, got[0]!.body, got[0]!.headers["edgestats-signature"]!, late)).toBe(
      false,
    );
    const log = (await webhooks.deliveries(at(ctx, t2), "a")).deliveries;
    expect(log.map((e) => [e.attempt, e.outcome, e.status])).toEqual([
      [3, "delivered", 200],
      [2, "retrying", 500],
      [1, "retrying", 500],
    ]);
    expect(JSON.stringify(log)).not.toContain(SECRET);
  });

  it("a slow receiver (past the timeout) is logged as no answer and retried; the retry carries the same id", async () => {
    const ctx = lib.ctx(T0, "slow");
    // the receiver that never answers in time: a route of the QStash stand-in's server that holds
    // the request (its GET-only paths answer 405 at once), so use a socket that accepts and stalls
    const sockets: Socket[] = [];
    const stall = createTcpServer((s) => {
      sockets.push(s);
      s.on("error", () => undefined);
    });
    await new Promise<void>((ok) => stall.listen(0, "127.0.0.1", ok));
    const port = (stall.address() as AddressInfo).port;
    try {
      await webhooks.put(ctx, "a", { ...hook(""), url: `http://127.0.0.1:${port}/slow` }, direct);
      const t = await webhooks.test(ctx, direct, "a");
      const started = Date.now();
      expect(await t.send()).toEqual({ delivered: 0, retrying: 1, failed: 0 });
      // the 400 ms timeout, not the receiver, ended the attempt
      expect(Date.now() - started).toBeLessThan(5_000);
      const [entry] = (await webhooks.deliveries(ctx, "a")).deliveries;
      expect(entry).toMatchObject({ attempt: 1, outcome: "retrying", status: null, retryAt: T0 + RETRY_BASE_MS });
      expect(entry!.error).toMatch(/timeout|abort/i);
      // the receiver comes back: the retry goes there with the same event id
      await webhooks.put(at(ctx, T0 + 1), "a", hook("/slow-back"), direct);
      expect(await webhooks.deliverDue(at(ctx, T0 + RETRY_BASE_MS), direct)).toMatchObject({ delivered: 1 });
      expect(gotAt("/slow-back").map((g) => JSON.parse(g.body).id)).toEqual([t.id]);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((ok) => stall.close(ok));
    }
  });
});

describe("a receiver that says stop", () => {
  // Found in review 16 (severity low): 410 Gone says the endpoint is gone for good (RFC 9110
  // §15.5.11), yet it was retried 8 times over about two hours like a 500, each attempt a subrequest
  // of the minute job and an entry pushing real failures out of the 50-entry log. Fixed: send()
  // marks a receiver's 410 `final` and webhooks.settle logs it `failed` at once (docs/webhooks.md).
  it("a 410 answer is final: logged failed at the first attempt, never retried", async () => {
    const ctx = lib.ctx(T0, "gone");
    receiver.respondWith(410, 410, 410, 410, 410, 410, 410, 410);
    const { result } = await firstAttempt(ctx, "/gone");
    expect(result).toEqual({ delivered: 0, retrying: 0, failed: 1 });
    expect(await webhooks.deliverDue(at(ctx, T0 + 10 * MINUTE), direct)).toMatchObject({ claimed: 0 });
    expect(gotAt("/gone")).toHaveLength(1);
    const log = (await webhooks.deliveries(at(ctx, T0 + 10 * MINUTE), "a")).deliveries;
    expect(log.map((e) => [e.attempt, e.outcome, e.status])).toEqual([[1, "failed", 410]]);
    receiver.respondWith();
  });

  it("a 2xx other than 200 is success; a 3xx redirect is a failure (the admin's URL is the only destination)", async () => {
    const ctx = lib.ctx(T0, "codes");
    receiver.respondWith(204);
    expect((await firstAttempt(ctx, "/codes")).result).toEqual({ delivered: 1, retrying: 0, failed: 0 });
    const other = lib.ctx(T0, "codes-302");
    receiver.respondWith(302);
    expect((await firstAttempt(other, "/codes-302")).result).toEqual({ delivered: 0, retrying: 1, failed: 0 });
  });
});

describe("through QStash: the documented publish API, no secret on the wire", () => {
  it("publishes with Upstash-Retries and a deduplication id; a retried publish is deduplicated; the secret never leaves", async () => {
    const ctx = lib.ctx(T0, "q");
    const viaQstash: webhooks.DeliverySettings = {
      allowLocalHttp: true,
      qstash: { url: qstash.url, token: qstash.token },
    };
    const before = qstash.published.length;
    const { id, result } = await firstAttempt(ctx, "/q", viaQstash);
    expect(result).toEqual({ delivered: 1, retrying: 0, failed: 0 });
    await eventually(() => gotAt("/q").length === 1);
    expect(qstash.problems).toEqual([]);
    const [pub] = qstash.published.slice(before);
    expect(pub!.path).toBe(`/v2/publish/${receiver.url}/q`);
    expect(pub!.headers["upstash-retries"]).toBe("5");
    expect(pub!.headers["upstash-deduplication-id"]).toMatch(/^[A-Za-z0-9_.-]+$/);
    expect(JSON.stringify(pub)).not.toContain(SECRET);
    const [got] = gotAt("/q");
    expect(JSON.stringify(got)).not.toContain(SECRET);
    expect(JSON.parse(got!.body).id).toBe(id);
    expect(got!.headers["upstash-message-id"]).toBeDefined();
    expect(await webhooks.verifySignature(SECRET, got!.body, got!.headers["edgestats-signature"]!, T0)).toBe(true);
    expect(JSON.stringify(await webhooks.deliveries(ctx, "a"))).not.toContain(SECRET);
    expect(JSON.stringify(await webhooks.list(ctx))).not.toContain(SECRET);
  });
});

describe("backoff: a receiver's Retry-After", () => {
  // Found in review 16 (severity low): a receiver answering 429 or 503 with `Retry-After: 1800`
  // (RFC 9110 §10.2.3) was retried after the fixed 1, 2, 4 ... minutes regardless, up to 4 more
  // attempts within its stated half hour. Fixed: send() reads it (seconds or an HTTP date) and
  // webhooks.settle takes the later of its backoff and that time, at most RETRY_CAP_MS (6 h) ahead.
  it("a 503 with Retry-After: 1800 is not retried before 30 minutes", async () => {
    const ctx = lib.ctx(T0, "retry-after");
    let hits = 0;
    const server = createHttpServer((req, res) => {
      hits++;
      req.resume();
      res.writeHead(503, { "retry-after": "1800" }).end();
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const port = (server.address() as AddressInfo).port;
    try {
      await webhooks.put(ctx, "a", { ...hook(""), url: `http://127.0.0.1:${port}/busy` }, direct);
      const t = await webhooks.test(ctx, direct, "a");
      expect(await t.send()).toEqual({ delivered: 0, retrying: 1, failed: 0 });
      const [entry] = (await webhooks.deliveries(ctx, "a")).deliveries;
      expect(entry!.retryAt).toBe(T0 + 1800 * 1000);
      for (const m of [1, 3, 7, 15, 29])
        expect(await webhooks.deliverDue(at(ctx, T0 + m * MINUTE), direct)).toMatchObject({ claimed: 0 });
      expect(hits).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
    }
  });

  it("Retry-After as an HTTP date is honoured, a day is capped at 6 hours, and it is ignored on a 500", async () => {
    const answers: [number, string][] = [
      [429, new Date(T0 + 10 * MINUTE).toUTCString()],
      [503, "86400"],
      [500, "1800"],
      [503, "soon"],
    ];
    const server = createHttpServer((req, res) => {
      req.resume();
      const i = Number((req.url ?? "").split("/").pop());
      const [status, after] = answers[i]!;
      res.writeHead(status, { "retry-after": after }).end();
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const port = (server.address() as AddressInfo).port;
    try {
      const want = [T0 + 10 * MINUTE, T0 + RETRY_CAP_MS, T0 + RETRY_BASE_MS, T0 + RETRY_BASE_MS];
      for (const [i] of answers.entries()) {
        const ctx = lib.ctx(T0, `retry-after-${i}`);
        await webhooks.put(ctx, "a", { ...hook(""), url: `http://127.0.0.1:${port}/${i}` }, direct);
        expect(await (await webhooks.test(ctx, direct, "a")).send()).toEqual({ delivered: 0, retrying: 1, failed: 0 });
        const [entry] = (await webhooks.deliveries(ctx, "a")).deliveries;
        expect({ i, retryAt: entry!.retryAt }).toEqual({ i, retryAt: want[i] });
      }
    } finally {
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
    }
  });
});
