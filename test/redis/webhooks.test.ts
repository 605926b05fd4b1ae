/**
 * Webhooks end to end on Node: real Redis behind the local Upstash server, a real HTTP receiver
 * (node:http) that checks signatures, a QStash stand-in that checks the publish API, and a fake
 * clock for detection and retries.
 */
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { ValidationError } from "../../src/errors.ts";
import { createRedis } from "../../src/redis/client.ts";
import { dayKeys } from "../../src/presence/keys.ts";
import { HOUR, MINUTE, hourIndex } from "../../src/time.ts";
import { streamKeys } from "../../src/trending/keys.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { hookKeys, registryKeys } from "../../src/webhooks/keys.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";
import { eventually, qstashForTests, receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("webhooks");
/** 2026-11-22 12:30 UTC. */
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const SECRET = "s3cret-s3cret-s3cret";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true };
const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true" });

const receiver = receiverForTests();
const qstash = qstashForTests();

const hook = (over: Partial<webhooks.WebhookInput> = {}): webhooks.WebhookInput => ({
  url: `${receiver.url}/hook`,
  events: ["leaderboard.leader"],
  secret: SECRET,
  ...over,
});
const body = (i: number) =>
  JSON.parse(receiver.received[i]!.body) as { id: string; type: string; at: number; data: Record<string, unknown> };

describe("webhook management", () => {
  it("creates, replaces, lists without secrets and deletes", async () => {
    const ctx = lib.ctx(T0, "manage");
    const first = await webhooks.put(ctx, "ops", hook({ filter: { board: "b1" } }), direct);
    expect(first).toMatchObject({
      created: true,
      replayed: false,
      webhook: { name: "ops", filter: { board: "b1" }, n: 10, createdAt: T0, updatedAt: T0 },
    });
    const later = { ...ctx, now: T0 + MINUTE };
    const second = await webhooks.put(
      later,
      "ops",
      hook({ events: ["leaderboard.leader", "trending.rising"] }),
      direct,
    );
    expect(second).toMatchObject({ created: false, webhook: { createdAt: T0, updatedAt: T0 + MINUTE, filter: null } });
    const { webhooks: listed } = await webhooks.list(ctx);
    expect(listed).toEqual([second.webhook]);
    expect(JSON.stringify(listed)).not.toContain(SECRET);
    expect(await webhooks.remove(ctx, "ops")).toEqual({ deleted: true, replayed: false });
    expect(await webhooks.remove(ctx, "ops")).toEqual({ deleted: false, replayed: false });
    expect((await webhooks.list(ctx)).webhooks).toEqual([]);
  });

  it("refuses bad settings with every issue listed, and writes nothing", async () => {
    const ctx = lib.ctx(T0, "invalid");
    const cases: [webhooks.WebhookInput, string[], boolean?][] = [
      [hook({ url: "http://example.com/x" }), ["url"]],
      [hook({ url: "ftp://127.0.0.1/x" }), ["url"]],
      [hook({ url: "https://user:pw@example.com/" }), ["url"]],
      [hook({ url: "not a url" }), ["url"]],
      [hook({ events: [] }), ["events"]],
      [hook({ events: ["trending.exploded" as webhooks.EventType] }), ["events.0"]],
      [hook({ events: ["leaderboard.leader", "leaderboard.leader"] }), ["events.1"]],
      [hook({ events: ["trending.entered"] }), ["filter"]],
      [hook({ events: ["presence.peak"], filter: { stream: "s" } }), ["events.0"]],
      [hook({ filter: { board: "bad name" } }), ["filter.board"]],
      [hook({ filter: { board: "a", room: "b" } as unknown as webhooks.Filter }), ["filter"]],
      [hook({ n: 0 }), ["n"]],
      [hook({ threshold: 2 }), ["threshold"]],
      [hook({ events: ["trending.rising"], threshold: Number.NaN }), ["threshold"]],
      [hook({ secret: "short" }), ["secret"]],
      [hook({ url: "http://example.com", secret: "short", n: 101 }), ["url", "n", "secret"]],
    ];
    for (const [input, paths] of cases) {
      const error = await webhooks.put(ctx, "h", input, direct).catch((e: unknown) => e);
      expect(error, JSON.stringify(input)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details?.map((d) => d.path)).toEqual(paths);
    }
    await expect(webhooks.put(ctx, "bad name", hook(), direct)).rejects.toBeInstanceOf(ValidationError);
    // http:// on this machine only where the deployment allows it
    await expect(webhooks.put(ctx, "h", hook(), { allowLocalHttp: false })).rejects.toBeInstanceOf(ValidationError);
    expect(await command(lib.target, "EXISTS", registryKeys(ctx.prefix).hooks)).toBe(0);
  });

  it("holds at most 20 webhooks; replacing one at the limit is fine", async () => {
    const ctx = lib.ctx(T0, "limit");
    for (let i = 0; i < webhooks.MAX_WEBHOOKS; i++) await webhooks.put(ctx, `h${i}`, hook(), direct);
    await expect(webhooks.put(ctx, "one-more", hook(), direct)).rejects.toMatchObject({
      code: "invalid_request",
      details: [{ path: "name" }],
    });
    await expect(webhooks.put(ctx, "h3", hook({ n: 5 }), direct)).resolves.toMatchObject({ created: false });
    expect((await webhooks.list(ctx)).webhooks).toHaveLength(webhooks.MAX_WEBHOOKS);
  });
});

describe("direct delivery", () => {
  it("a test event reaches the receiver, signed; the log says delivered", async () => {
    const ctx = lib.ctx(T0, "test-event");
    await webhooks.put(ctx, "ops", hook(), direct);
    const start = receiver.received.length;
    const { id, send } = await webhooks.test(ctx, direct, "ops");
    expect(await send()).toEqual({ delivered: 1, retrying: 0, failed: 0 });
    const got = receiver.received[start]!;
    expect(got).toMatchObject({ method: "POST", path: "/hook" });
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["edgestats-event"]).toBe("webhook.test");
    expect(JSON.parse(got.body)).toEqual({
      id,
      type: "webhook.test",
      at: T0,
      data: { webhook: "ops" },
    });
    const sig = got.headers["edgestats-signature"]!;
    expect(sig).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(sig.startsWith(`t=${T0 / 1000},`)).toBe(true);
    expect(await webhooks.verifySignature(SECRET, got.body, sig, T0)).toBe(true);
    // what a receiver must refuse: another secret, a changed body, an old timestamp
    expect(await webhooks.verifySignature("another-secret-of-16", got.body, sig, T0)).toBe(false);
    expect(await webhooks.verifySignature(SECRET, got.body.replace("ops", "opz"), sig, T0)).toBe(false);
    expect(await webhooks.verifySignature(SECRET, got.body, sig, T0 + 10 * MINUTE)).toBe(false);
    const { deliveries } = await webhooks.deliveries(ctx, "ops");
    expect(deliveries).toEqual([
      {
        delivery: `${id}:ops`,
        event: id,
        type: "webhook.test",
        attempt: 1,
        at: T0,
        via: "direct",
        outcome: "delivered",
        status: 200,
        error: null,
        messageId: null,
      },
    ]);
    // nothing is left to deliver
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + HOUR }, direct)).toMatchObject({ claimed: 0 });
  });

  it("a log entry written before times were epoch ms (ISO `at`) is answered in epoch ms", async () => {
    const ctx = lib.ctx(T0, "log-iso");
    await webhooks.put(ctx, "ops", hook(), direct);
    const old = { delivery: "evt_x:ops", event: "evt_x", type: "webhook.test", attempt: 1, via: "direct" };
    const entry = { ...old, at: new Date(T0).toISOString(), outcome: "delivered", status: 200, error: null };
    await command(lib.target, "LPUSH", hookKeys(ctx.prefix, "ops").log, JSON.stringify({ ...entry, messageId: null }));
    expect((await webhooks.deliveries(ctx, "ops")).deliveries).toEqual([{ ...entry, at: T0, messageId: null }]);
  });

  it("an unknown webhook is a 404-class error and queues nothing", async () => {
    const ctx = lib.ctx(T0, "test-unknown");
    await expect(webhooks.test(ctx, direct, "nope")).rejects.toMatchObject({ code: "not_found" });
    await expect(webhooks.deliveries(ctx, "nope")).rejects.toMatchObject({ code: "not_found" });
    expect(await command(lib.target, "EXISTS", registryKeys(ctx.prefix).pending)).toBe(0);
  });

  it("retries after 500s with backoff, the same body each time, until delivered", async () => {
    const ctx = lib.ctx(T0, "retry");
    await webhooks.put(ctx, "ops", hook(), direct);
    const start = receiver.received.length;
    receiver.respondWith(500, 503);
    const { send } = await webhooks.test(ctx, direct, "ops");
    expect(await send()).toEqual({ delivered: 0, retrying: 1, failed: 0 });
    // the first retry is due a minute later, not before
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + MINUTE - 1 }, direct)).toMatchObject({ claimed: 0 });
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + MINUTE }, direct)).toMatchObject({ claimed: 1, retrying: 1 });
    // then two minutes after that
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + 3 * MINUTE - 1 }, direct)).toMatchObject({ claimed: 0 });
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + 3 * MINUTE }, direct)).toMatchObject({
      claimed: 1,
      delivered: 1,
    });
    const bodies = receiver.received.slice(start).map((r) => r.body);
    expect(bodies).toHaveLength(3);
    expect(new Set(bodies).size).toBe(1);
    const log = (await webhooks.deliveries(ctx, "ops")).deliveries;
    expect(log.map((d) => [d.attempt, d.outcome, d.status])).toEqual([
      [3, "delivered", 200],
      [2, "retrying", 503],
      [1, "retrying", 500],
    ]);
    expect(log[1]!.retryAt).toBe(T0 + MINUTE + 2 * MINUTE);
  });

  it("gives up after MAX_ATTEMPTS and logs it; an unreachable URL fails the same way", async () => {
    const ctx = lib.ctx(T0, "give-up");
    await webhooks.put(ctx, "down", hook({ url: "http://127.0.0.1:9/hook" }), direct);
    const { send } = await webhooks.test(ctx, direct, "down");
    await send();
    let now = T0;
    for (let attempt = 2; attempt <= webhooks.MAX_ATTEMPTS; attempt++) {
      now += 2 ** (attempt - 2) * MINUTE;
      expect(await webhooks.deliverDue({ ...ctx, now }, direct)).toMatchObject({ claimed: 1 });
    }
    const log = (await webhooks.deliveries(ctx, "down")).deliveries;
    expect(log).toHaveLength(webhooks.MAX_ATTEMPTS);
    expect(log[0]).toMatchObject({ attempt: webhooks.MAX_ATTEMPTS, outcome: "failed", status: null });
    expect(log[0]!.error).toBeTruthy();
    expect(await webhooks.deliverDue({ ...ctx, now: now + 24 * HOUR }, direct)).toMatchObject({ claimed: 0 });
    expect(await command(lib.target, "EXISTS", registryKeys(ctx.prefix).deliveries)).toBe(0);
  });

  it("a claimed delivery whose run died is sent again after the lease (at least once)", async () => {
    const ctx = lib.ctx(T0, "lease");
    await webhooks.put(ctx, "ops", hook(), direct);
    const { id } = await webhooks.test(ctx, direct, "ops"); // claimed, never sent: the run "died"
    const start = receiver.received.length;
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + 4 * MINUTE }, direct)).toMatchObject({ claimed: 0 });
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + 5 * MINUTE }, direct)).toMatchObject({
      claimed: 1,
      delivered: 1,
    });
    expect(body(start).id).toBe(id);
  });

  it("deleting a webhook drops its queued deliveries and its log", async () => {
    const ctx = lib.ctx(T0, "delete");
    await webhooks.put(ctx, "ops", hook(), direct);
    receiver.respondWith(500);
    await (await webhooks.test(ctx, direct, "ops")).send();
    await webhooks.remove(ctx, "ops");
    // dropped by the DELETE itself since review 12 (before, by the next claim: `dropped: 1`)
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + HOUR }, direct)).toMatchObject({ claimed: 0, dropped: 0 });
    expect(await command(lib.target, "EXISTS", hookKeys(ctx.prefix, "ops").log)).toBe(0);
    expect(await command(lib.target, "EXISTS", registryKeys(ctx.prefix).deliveries)).toBe(0);
  });
});

describe("a webhook deleted and created again under its name", () => {
  it("does not get the old webhook's queued deliveries (review: they went to the new URL with the new secret)", async () => {
    const ctx = lib.ctx(T0, "recreate");
    await webhooks.put(ctx, "ops", hook(), direct);
    receiver.respondWith(500);
    await (await webhooks.test(ctx, direct, "ops")).send(); // failed: queued for a retry
    receiver.respondWith(200);
    await webhooks.remove(ctx, "ops");
    await webhooks.put({ ...ctx, now: T0 + 1000 }, "ops", hook({ url: `${receiver.url}/other` }), direct);
    const start = receiver.received.length;
    // dropped by the DELETE itself since review 12 (before, by the next claim: `dropped: 1`)
    expect(await webhooks.deliverDue({ ...ctx, now: T0 + HOUR }, direct)).toMatchObject({ claimed: 0, dropped: 0 });
    expect(receiver.received.length).toBe(start);
  });
});

describe("QStash delivery", () => {
  it("publishes through the documented API; QStash delivers with our signature forwarded", async () => {
    const ctx = lib.ctx(T0, "qstash");
    const settings: webhooks.DeliverySettings = {
      allowLocalHttp: true,
      qstash: { url: qstash.url, token: qstash.token },
    };
    await webhooks.put(ctx, "ops", hook(), settings);
    const start = receiver.received.length;
    const { id, send } = await webhooks.test(ctx, settings, "ops");
    expect(await send()).toEqual({ delivered: 1, retrying: 0, failed: 0 });
    expect(qstash.problems).toEqual([]);
    const publish = qstash.published.at(-1)!;
    expect(publish.path).toBe(`/v2/publish/${receiver.url}/hook`);
    expect(publish.headers).toMatchObject({
      authorization: `Bearer ${qstash.token}`,
      "content-type": "application/json",
      "upstash-method": "POST",
      "upstash-retries": "5",
      // the delivery id and the webhook's createdAt (its life; review 12)
      "upstash-deduplication-id": `${id}-ops-${T0}`,
    });
    await eventually(() => receiver.received.length > start);
    const got = receiver.received[start]!;
    expect(got.headers["user-agent"]).toBe("Upstash-QStash");
    expect(got.headers["edgestats-event"]).toBe("webhook.test");
    expect(await webhooks.verifySignature(SECRET, got.body, got.headers["edgestats-signature"]!, T0)).toBe(true);
    expect(JSON.parse(got.body)).toMatchObject({ id, type: "webhook.test" });
    const [entry] = (await webhooks.deliveries(ctx, "ops")).deliveries;
    expect(entry).toMatchObject({
      via: "qstash",
      outcome: "published",
      status: 201,
      messageId: got.headers["upstash-message-id"],
    });
  });

  it("a wrong token is a failed publish, retried by the job", async () => {
    const ctx = lib.ctx(T0, "qstash-bad");
    const settings: webhooks.DeliverySettings = { allowLocalHttp: true, qstash: { url: qstash.url, token: "wrong" } };
    await webhooks.put(ctx, "ops", hook(), settings);
    expect(await (await webhooks.test(ctx, settings, "ops")).send()).toEqual({ delivered: 0, retrying: 1, failed: 0 });
    qstash.problems.length = 0;
    const [entry] = (await webhooks.deliveries(ctx, "ops")).deliveries;
    expect(entry).toMatchObject({ via: "qstash", outcome: "retrying", status: 401 });
  });
});

describe("emit (the hook other features call)", () => {
  it("trending.rising goes only to webhooks whose threshold the score reaches", async () => {
    const ctx = lib.ctx(T0, "emit-rising");
    await webhooks.put(ctx, "default", hook({ events: ["trending.rising"], filter: { stream: "s" } }), direct);
    await webhooks.put(ctx, "picky", hook({ events: ["trending.rising"], threshold: 10 }), direct);
    expect((await webhooks.list(ctx)).webhooks.map((w) => [w.name, w.threshold])).toEqual([
      ["default", 3],
      ["picky", 10],
    ]);
    expect(await webhooks.subscriptions(ctx, "trending.rising")).toEqual({ names: ["s", null], threshold: 3 });
    expect(await webhooks.subscriptions(ctx, "leaderboard.leader")).toEqual({ names: [], threshold: null });
    const rising = (score: number) => ({
      type: "trending.rising" as const,
      subject: { kind: "stream" as const, name: "s" },
      data: { member: "m", score },
      score,
      key: `m\n${score}`,
    });
    expect(await webhooks.emit(ctx, rising(2.9))).toMatchObject({ queued: 0 });
    expect(await webhooks.emit(ctx, rising(3))).toMatchObject({ queued: 1 });
    expect(await webhooks.emit(ctx, rising(12))).toMatchObject({ queued: 2 });
  });

  it("queues for subscribed webhooks whose filter matches, with a stable id", async () => {
    const ctx = lib.ctx(T0, "emit");
    await webhooks.put(ctx, "all-boards", hook(), direct);
    await webhooks.put(ctx, "board-b1", hook({ filter: { board: "b1" } }), direct);
    await webhooks.put(ctx, "other", hook({ events: ["trending.rising"] }), direct);
    const event = {
      type: "leaderboard.leader" as const,
      subject: { kind: "board" as const, name: "b1" },
      data: { board: "b1", player: "ann" },
      key: "ann",
    };
    const first = await webhooks.emit(ctx, event);
    expect(first).toMatchObject({ queued: 2, full: 0 });
    // the same facts again: the same id, nothing queued twice
    expect(await webhooks.emit(ctx, event)).toEqual({ ...first, queued: 0, repeated: true });
    expect(await webhooks.emit(ctx, { ...event, subject: { kind: "board", name: "b2" } })).toMatchObject({ queued: 1 });
    const start = receiver.received.length;
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ claimed: 3, delivered: 3 });
    const ids = receiver.received
      .slice(start)
      .map((r) => JSON.parse(r.body) as { id: string; type: string; data: unknown });
    expect(ids.filter((b) => b.id === first.id)).toHaveLength(2);
    expect(ids.every((b) => b.type === "leaderboard.leader")).toBe(true);
    // delivered, and found again by a later run: still not sent twice
    expect(await webhooks.emit({ ...ctx, now: T0 + HOUR }, event)).toMatchObject({ queued: 0, repeated: true });
  });
});

/** Sets a stream's hour bucket as compaction leaves it (members and the "\0err" sentinel, scored ≤ 0). */
async function bucket(ctx: Ctx, stream: string, hour: number, counts: Record<string, number>) {
  const key = streamKeys(ctx.prefix, stream).bucket(hour);
  await command(lib.target, "ZADD", key, 0, "\u0000err", ...Object.entries(counts).flatMap(([m, c]) => [c, m]));
}

describe("trending.entered / trending.left", () => {
  it("compares the top N of the last two finished hours, once per hour", async () => {
    const ctx = lib.ctx(T0, "trending");
    const hour = hourIndex(T0); // 12:00; at 13:05 the last two finished hours are 12:00 and 11:00
    await bucket(ctx, "s", hour - 1, { a: 9, b: 8, c: 7, x: 1 });
    await bucket(ctx, "s", hour, { a: 20, 'név, "q"': 10, b: 5, c: 4 });
    await webhooks.put(
      ctx,
      "top3",
      hook({ events: ["trending.entered", "trending.left"], filter: { stream: "s" }, n: 3 }),
      direct,
    );
    await webhooks.put(
      ctx,
      "entered-only",
      hook({ events: ["trending.entered"], filter: { stream: "s" }, n: 3 }),
      direct,
    );
    await webhooks.put(ctx, "elsewhere", hook({ events: ["trending.entered"], filter: { stream: "t" } }), direct);
    const at = (hour + 1) * HOUR + 5 * MINUTE;
    const start = receiver.received.length;
    const run = await webhooks.trendingWebhooksJob({ ...ctx, now: at }, config);
    expect(run).toMatchObject({ webhooks: 3, checked: 3, events: 3, queued: 3, full: 0, claimed: 3, delivered: 3 });
    const got = receiver.received
      .slice(start)
      .map((r) => JSON.parse(r.body) as { id: string; type: string; at: number; data: Record<string, unknown> });
    const entered = got.filter((b) => b.type === "trending.entered");
    const left = got.filter((b) => b.type === "trending.left");
    expect(entered).toHaveLength(2);
    expect(entered[0]!.id).toBe(entered[1]!.id);
    expect(entered[0]).toMatchObject({
      at,
      data: {
        stream: "s",
        hour: hour * HOUR,
        n: 3,
        members: [{ member: 'név, "q"', rank: 2, count: 10 }],
      },
    });
    expect(left).toEqual([
      expect.objectContaining({
        data: {
          stream: "s",
          hour: hour * HOUR,
          n: 3,
          members: [{ member: "c", previousRank: 3, previousCount: 7 }],
        },
      }),
    ]);
    // a second run in the same hour compares nothing again
    expect(await webhooks.trendingWebhooksJob({ ...ctx, now: at + 10 * MINUTE }, config)).toMatchObject({
      checked: 0,
      events: 0,
      claimed: 0,
    });
    // the next hour: no change in the top 3 between 12:00 and 13:00 → no event
    await bucket(ctx, "s", hour + 1, { a: 1, 'név, "q"': 1, b: 1 });
    expect(await webhooks.trendingWebhooksJob({ ...ctx, now: at + HOUR }, config)).toMatchObject({
      checked: 3,
      events: 0,
    });
  });

  it("costs one round trip when there is no webhook", async () => {
    const ctx = lib.ctx(T0, "trending-none");
    expect(await webhooks.trendingWebhooksJob(ctx, config)).toEqual({ webhooks: 0 });
  });
});

describe("presence.peak", () => {
  async function setPeak(ctx: Ctx, room: string, at: number, peak: number, msAfterMidnight: number) {
    await command(
      lib.target,
      "BITFIELD",
      dayKeys(ctx.prefix, room, at).daily,
      "SET",
      "u32",
      32,
      peak,
      "SET",
      "u32",
      64,
      msAfterMidnight,
    );
  }

  it("tells each subscribed room's new daily peak once, then again only when it rises", async () => {
    const ctx = lib.ctx(T0, "peak");
    await webhooks.put(ctx, "room-r", hook({ events: ["presence.peak"], filter: { room: "r" } }), direct);
    // nothing yet today: no event
    expect(await webhooks.webhooksJob(ctx, config)).toMatchObject({ checked: 1, events: 0, claimed: 0 });
    const day = Date.UTC(2026, 10, 22);
    await setPeak(ctx, "r", T0, 5, 3_600_000);
    const start = receiver.received.length;
    expect(await webhooks.webhooksJob({ ...ctx, now: T0 + MINUTE }, config)).toMatchObject({
      events: 1,
      queued: 1,
      delivered: 1,
    });
    expect(body(start)).toMatchObject({
      type: "presence.peak",
      data: { room: "r", day: "2026-11-22", peak: 5, peakAt: day + 3_600_000, previous: 0 },
    });
    expect(await webhooks.webhooksJob({ ...ctx, now: T0 + 2 * MINUTE }, config)).toMatchObject({ events: 0 });
    await setPeak(ctx, "r", T0, 7, 4_000_000);
    expect(await webhooks.webhooksJob({ ...ctx, now: T0 + 3 * MINUTE }, config)).toMatchObject({
      events: 1,
      delivered: 1,
    });
    expect(body(start + 1).data).toMatchObject({ peak: 7, previous: 5 });
    // replacing the webhook with the same room keeps what it was told; another room starts afresh
    await webhooks.put(
      ctx,
      "room-r",
      hook({ events: ["presence.peak"], filter: { room: "r" }, secret: "another-secret-16" }),
      direct,
    );
    expect(await webhooks.webhooksJob({ ...ctx, now: T0 + 4 * MINUTE }, config)).toMatchObject({ events: 0 });
    await setPeak(ctx, "r2", T0, 3, 4_000_000);
    await webhooks.put(ctx, "room-r", hook({ events: ["presence.peak"], filter: { room: "r2" } }), direct);
    expect(await webhooks.webhooksJob({ ...ctx, now: T0 + 5 * MINUTE }, config)).toMatchObject({
      events: 1,
      delivered: 1,
    });
    expect(body(start + 2).data).toMatchObject({ room: "r2", peak: 3, previous: 0 });
    await webhooks.put(ctx, "room-r", hook({ events: ["presence.peak"], filter: { room: "r" } }), direct);
    // a new day starts from zero: its first peak is news again
    const tomorrow = T0 + 24 * HOUR;
    await setPeak(ctx, "r", tomorrow, 2, 60_000);
    expect(await webhooks.webhooksJob({ ...ctx, now: tomorrow }, config)).toMatchObject({ events: 1, delivered: 1 });
    expect(body(start + 3).data).toMatchObject({ room: "r", day: "2026-11-23", peak: 2, previous: 0 });
  });

  it("the runs right after midnight finish the day that ended, once; a webhook created after midnight is not told of it", async () => {
    const ctx = lib.ctx(T0, "peak-rollover");
    await webhooks.put(ctx, "old", hook({ events: ["presence.peak"], filter: { room: "m" } }), direct);
    const midnight = Date.UTC(2026, 10, 23);
    await setPeak(ctx, "m", T0, 4, 23 * HOUR);
    expect(await webhooks.webhooksJob({ ...ctx, now: midnight - MINUTE }, config)).toMatchObject({ events: 1 });
    // after that day's last run: 6 at 23:59:50; the new day starts with 2
    await setPeak(ctx, "m", T0, 6, 24 * HOUR - 10_000);
    await setPeak(ctx, "m", midnight, 2, 20_000);
    const start = receiver.received.length;
    const first = await webhooks.webhooksJob({ ...ctx, now: midnight + 30_000 }, config);
    expect(first).toMatchObject({ checked: 1, events: 2, queued: 2, delivered: 2 });
    // sent in parallel: in either order
    const told = [body(start), body(start + 1)].sort((a, b) => String(a.data.day).localeCompare(String(b.data.day)));
    expect(told.map((b) => b.data)).toEqual([
      { room: "m", day: "2026-11-22", peak: 6, peakAt: midnight - 10_000, previous: 4 },
      { room: "m", day: "2026-11-23", peak: 2, peakAt: midnight + 20_000, previous: 0 },
    ]);
    expect(told.map((b) => b.at)).toEqual([midnight + 30_000, midnight + 30_000]);
    // later runs of the rollover tell nothing again; a webhook created after midnight gets only today's
    expect(await webhooks.webhooksJob({ ...ctx, now: midnight + 90_000 }, config)).toMatchObject({ events: 0 });
    await webhooks.put(
      { ...ctx, now: midnight + 2 * MINUTE },
      "new",
      hook({ events: ["presence.peak"], filter: { room: "m" } }),
      direct,
    );
    const after = receiver.received.length;
    expect(await webhooks.webhooksJob({ ...ctx, now: midnight + 3 * MINUTE }, config)).toMatchObject({
      checked: 2,
      events: 1,
      delivered: 1,
    });
    expect(body(after).data).toMatchObject({ day: "2026-11-23", peak: 2 });
    expect(receiver.received[after]!.path).toBe("/hook");
  });

  it("reads the day that ended only in the runs right after midnight: ordinary runs cost what they did", async () => {
    const tag = `whroll${Math.random().toString(36).slice(2, 8)}`;
    const counted = {
      ...lib.ctx(T0, "peak-rollover-cost"),
      redis: createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}` }),
    };
    await webhooks.put(counted, "p", hook({ events: ["presence.peak"], filter: { room: "c" } }), direct);
    const midnight = Date.UTC(2026, 10, 23);
    const commandsAt = async (now: number) => {
      await webhooks.webhooksJob({ ...counted, now }, config); // warms the scripts
      await resetStats(lib.target, tag);
      await webhooks.webhooksJob({ ...counted, now }, config);
      return (await statsOf(lib.target, tag)).commands;
    };
    const ordinary = await commandsAt(midnight - 2 * MINUTE);
    // nothing to tell: + one BITFIELD of yesterday's record per subscribed room, in the first 5 minutes
    expect(await commandsAt(midnight + MINUTE)).toBe(ordinary + 1);
    expect(await commandsAt(midnight + webhooks.PEAK_ROLLOVER_MS)).toBe(ordinary);
    expect(await commandsAt(midnight + HOUR)).toBe(ordinary);
  });
});
