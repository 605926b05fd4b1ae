/**
 * Contract-conformance review of webhook deliveries (API.md v2: "body {id, type, at, data}",
 * "Edgestats-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>", "At least once;
 * id for deduplication") against a real receiver, checked with node:crypto rather than the
 * project's own verifier. Deviations are `it.fails` naming the contract line and what is right.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import { dayKeys } from "../../src/presence/keys.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("review-contract-webhooks");
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const SECRET = "review-contract-secret";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true };
const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true" });

const receiver = receiverForTests();

/** What a receiver following API.md checks: the header's t, and v1 over "<t>.<raw body>". */
function signedWith(secret: string, header: string, body: string): { t: number; ok: boolean } {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return { t: NaN, ok: false };
  const mac = createHmac("sha256", secret).update(`${m[1]}.${body}`).digest("hex");
  return { t: Number(m[1]), ok: mac === m[2] };
}

describe("direct delivery: retries and deduplication", () => {
  it("every retry carries the same id and body, each signed at the time it is sent", async () => {
    const ctx = lib.ctx(T0, "retries");
    const hook: webhooks.WebhookInput = { url: `${receiver.url}/r`, events: ["leaderboard.leader"], secret: SECRET };
    await webhooks.put(ctx, "r", hook, direct);
    const start = receiver.received.length;
    receiver.respondWith(500, 502, 503);
    const { id, send } = await webhooks.test(ctx, direct, "r");
    await send();
    let now = T0;
    for (let attempt = 2; attempt <= 4; attempt++) {
      now += 2 ** (attempt - 2) * MINUTE;
      await webhooks.deliverDue({ ...ctx, now }, direct);
    }
    const got = receiver.received.slice(start);
    expect(got).toHaveLength(4);
    expect(new Set(got.map((g) => g.body)).size).toBe(1);
    expect(got.map((g) => (JSON.parse(g.body) as { id: string }).id)).toEqual([id, id, id, id]);
    expect(new Set(got.map((g) => g.headers["edgestats-delivery"])).size).toBe(1);
    // a receiver that refuses timestamps older than 5 minutes (docs/webhooks.md) accepts the late retries
    const sent = [T0, T0 + MINUTE, T0 + 2 * MINUTE + MINUTE, T0 + 3 * MINUTE + 4 * MINUTE];
    got.forEach((g, i) => {
      const sig = signedWith(SECRET, g.headers["edgestats-signature"]!, g.body);
      expect(sig.ok, `attempt ${i + 1}`).toBe(true);
      expect(sig.t).toBe(Math.floor(sent[i]! / 1000));
    });
    // delivered: nothing is sent again
    expect(await webhooks.deliverDue({ ...ctx, now: now + HOUR }, direct)).toMatchObject({ claimed: 0 });
  });

  it("two webhooks on one event each get it once, with the same event id", async () => {
    const ctx = lib.ctx(T0, "fanout");
    for (const name of ["a", "b"])
      await webhooks.put(
        ctx,
        name,
        { url: `${receiver.url}/${name}`, events: ["trending.rising"], secret: SECRET },
        direct,
      );
    const start = receiver.received.length;
    const event: webhooks.EventInput = {
      type: "trending.rising",
      subject: { kind: "stream", name: "s" },
      key: "h\nm",
      score: 9,
      data: { stream: "s", member: "m" },
    };
    expect(await webhooks.emit(ctx, event)).toMatchObject({ queued: 2 });
    expect(await webhooks.emit(ctx, event)).toMatchObject({ queued: 0, repeated: true });
    await webhooks.deliverDue(ctx, direct);
    const got = receiver.received.slice(start);
    expect(got.map((g) => g.path).sort()).toEqual(["/a", "/b"]);
    const ids = got.map((g) => (JSON.parse(g.body) as { id: string }).id);
    expect(ids[0]).toBe(ids[1]);
  });
});

describe("event bodies", () => {
  // FIXED (was: the body's `at` was an ISO-8601 string, src/webhooks/webhooks.ts): API.md common
  // rules, "Time: timestamps in and out are epoch milliseconds": `at` is epoch ms in every event
  // (webhook.test, emit, emitLua, detection), as presence.peak's `peakAt` and GET …/history's `hour`.
  it("`at` is epoch milliseconds", async () => {
    const ctx = lib.ctx(T0, "at");
    await webhooks.put(
      ctx,
      "t",
      { url: `${receiver.url}/t`, events: ["presence.peak"], filter: { room: "x" }, secret: SECRET },
      direct,
    );
    const start = receiver.received.length;
    await (await webhooks.test(ctx, direct, "t")).send();
    const body = JSON.parse(receiver.received[start]!.body) as { id: string; type: string; at: unknown; data: unknown };
    expect(Object.keys(body)).toEqual(["id", "type", "at", "data"]);
    expect(body.at).toBe(T0);
  });

  // FIXED (was: trending.rising's and trending.entered/left's `data.hour` were ISO strings, where
  // GET /v1/trending/{stream}/history answers `hour` as epoch ms): same rule ("timestamps in and
  // out are epoch milliseconds"); test/redis/webhooks*.test.ts pin the epoch ms form now.
  it("trending.rising's data.hour is epoch milliseconds, as GET …/history's hour", async () => {
    const ctx = lib.ctx(T0, "rising-hour");
    const retention = { retentionHours: config.trendingRetentionHours };
    await trending.record(ctx, "s", [{ member: "x", count: 60 }], retention);
    await webhooks.put(
      ctx,
      "h",
      { url: `${receiver.url}/h`, events: ["trending.rising"], filter: { stream: "s" }, secret: SECRET },
      direct,
    );
    const start = receiver.received.length;
    expect(await webhooks.webhooksJob(ctx, config)).toMatchObject({ risingEvents: 1, delivered: 1 });
    const body = JSON.parse(receiver.received[start]!.body) as { data: { hour: unknown; member: string } };
    expect(body.data.member).toBe("x");
    expect(body.data.hour).toBe(Math.floor(T0 / HOUR) * HOUR);
  });

  // FIXED (was: the minute job compared only *today's* PCU, so a new peak reached after the day's
  // last run (23:59:xx) was never told): API.md, event `presence.peak`. The runs of the first
  // minutes after midnight (PEAK_ROLLOVER_MS) also finish the day before for the subscribed rooms.
  it("a peak reached in the last minute of a UTC day is still told", async () => {
    const ctx = lib.ctx(T0, "peak-midnight");
    await webhooks.put(
      ctx,
      "p",
      { url: `${receiver.url}/p`, events: ["presence.peak"], filter: { room: "r" }, secret: SECRET },
      direct,
    );
    const lastRun = Date.UTC(2026, 10, 22, 23, 59);
    const daily = dayKeys(ctx.prefix, "r", lastRun).daily;
    // the day's PCU record (u32 at 32: peak, u32 at 64: ms after midnight), as the heartbeat writes it
    await command(lib.target, "BITFIELD", daily, "SET", "u32", 32, 4, "SET", "u32", 64, 23 * HOUR);
    expect(await webhooks.webhooksJob({ ...ctx, now: lastRun }, config)).toMatchObject({ events: 1 });
    // at 23:59:30 the room reaches 9, after that minute's run
    await command(lib.target, "BITFIELD", daily, "SET", "u32", 32, 9, "SET", "u32", 64, 24 * HOUR - 30_000);
    const start = receiver.received.length;
    await webhooks.webhooksJob({ ...ctx, now: Date.UTC(2026, 10, 23, 0, 0) }, config);
    await webhooks.webhooksJob({ ...ctx, now: Date.UTC(2026, 10, 23, 0, 1) }, config);
    const told = receiver.received
      .slice(start)
      .map((r) => JSON.parse(r.body) as { data: { day: string; peak: number } })
      .filter((b) => b.data.day === "2026-11-22");
    expect(told.map((b) => b.data.peak)).toEqual([9]);
  });
});
