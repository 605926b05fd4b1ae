/** Review checks of webhook deliveries against an independent HMAC (node:crypto), not the project's own verifier. */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import * as webhooks from "../../src/webhooks/index.ts";
import { MAX_PENDING } from "../../src/webhooks/deliver.ts";
import { registryKeys } from "../../src/webhooks/keys.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("review-webhooks");
const T0 = Date.UTC(2026, 10, 22, 12, 30, 7, 999);
const SECRET = "s3cret-ünïcode-☕-secret";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true };

const receiver = receiverForTests();

describe("Edgestats-Signature (review)", () => {
  it("is exactly t=<unix>,v1=<hex HMAC-SHA256(secret, '<t>.<body>')> over the bytes received, unicode included", async () => {
    const ctx = lib.ctx(T0);
    await webhooks.put(ctx, "sig", { url: `${receiver.url}/sig`, events: ["trending.rising"], secret: SECRET }, direct);
    const start = receiver.received.length;
    const member = 'café ☕ 東京 "q", \n𝄞';
    const emitted = await webhooks.emit(ctx, {
      type: "trending.rising",
      subject: { kind: "stream", name: "s1" },
      key: "k1",
      score: 10,
      data: { stream: "s1", member },
    });
    expect(emitted.queued).toBe(1);
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ delivered: 1 });
    const got = receiver.received[start]!;
    const header = got.headers["edgestats-signature"]!;
    const t = Math.floor(T0 / 1000);
    const mac = createHmac("sha256", Buffer.from(SECRET, "utf8"))
      .update(Buffer.from(`${t}.${got.body}`, "utf8"))
      .digest("hex");
    expect(header).toBe(`t=${t},v1=${mac}`);
    const parsed = JSON.parse(got.body) as { id: string; data: { member: string } };
    expect(parsed.data.member).toBe(member);
    expect(got.headers["edgestats-delivery"]).toBe(`${parsed.id}:sig`);
    // the secret is nowhere in what was sent or logged
    expect(got.body).not.toContain(SECRET);
    expect(JSON.stringify(await webhooks.deliveries(ctx, "sig"))).not.toContain(SECRET);
    expect(JSON.stringify(await webhooks.list(ctx))).not.toContain(SECRET);
  });
});

describe("a full queue (review)", () => {
  it("an event refused as full is not remembered as sent: found again once there is room, it is queued", async () => {
    const ctx = lib.ctx(T0, "full");
    await webhooks.put(ctx, "r", { url: `${receiver.url}/r`, events: ["trending.rising"], secret: SECRET }, direct);
    const pending = registryKeys(ctx.prefix).pending;
    const filler: (string | number)[] = [];
    for (let i = 0; i < MAX_PENDING; i++) filler.push(T0 + 3_600_000, `filler-${i}`);
    await command(lib.target, "ZADD", pending, ...filler);
    const event: webhooks.EventInput = {
      type: "trending.rising",
      subject: { kind: "stream", name: "s1" },
      key: "hour\nm1",
      score: 10,
      data: { stream: "s1", member: "m1" },
    };
    expect(await webhooks.emit(ctx, event)).toMatchObject({ queued: 0, full: 1 });
    expect(await webhooks.emitMany(ctx, [event])).toMatchObject({ queued: 0, full: 1 });
    // the queue drains; the detector finds the same facts on its next run
    await command(lib.target, "DEL", pending);
    expect(await webhooks.emitMany(ctx, [event])).toEqual({ queued: 1, full: 0, repeated: 0 });
    expect(await webhooks.emit(ctx, event)).toMatchObject({ queued: 0, repeated: true });
  });
});
