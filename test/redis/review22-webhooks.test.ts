/**
 * Review 22: webhook deliveries through the library on the local Upstash server (real
 * redis-server) and a real local receiver: a body of non-ASCII members (trending members are any
 * UTF-8 text) arrives byte for byte and verifies with docs/webhooks.md's recipe; at least once with
 * one id (the same facts emitted while pending or after delivery are not sent again; two webhooks
 * get the same event id under their own delivery ids); a DELETE with deliveries pending drops
 * them, and a webhook created again under the name is told the same event afresh.
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("review22-wh");
const T0 = Date.UTC(2026, 10, 28, 15, 0, 30);
const SECRET = "review22-secret-0123456789";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true, timeoutMs: 2_000 };
const receiver = receiverForTests();
const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });

/** docs/webhooks.md's recipe, verbatim but for the clock (the test's `now`, not Date.now()). */
async function verify(secret: string, rawBody: string, header: string, nowMs: number, toleranceSeconds = 300) {
  const fields = Object.fromEntries(header.split(",").map((p) => p.split("=", 2)));
  const t = Number(fields.t);
  if (!Number.isInteger(t) || Math.abs(nowMs / 1000 - t) > toleranceSeconds) return false;
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["verify"],
  );
  const mac = Uint8Array.from((fields.v1 ?? "").match(/../g) ?? [], (h: string) => parseInt(h, 16));
  return crypto.subtle.verify("HMAC", key, mac, new TextEncoder().encode(`${t}.${rawBody}`));
}

const leader = (board: string, player: string): webhooks.EventInput => ({
  type: "leaderboard.leader",
  subject: { kind: "board", name: board },
  data: { board, player, score: 1, previous: null, season: null },
  key: `${player}:1`,
});
const got = (path: string) => receiver.received.filter((r) => r.path === path);

describe("review 22: bodies of any UTF-8", () => {
  it("a trending.rising member of non-ASCII text arrives byte for byte and verifies with the docs' recipe", async () => {
    const ctx = lib.ctx(T0, "utf8");
    await webhooks.put(
      ctx,
      "r",
      { url: `${receiver.url}/utf8`, events: ["trending.rising"], secret: SECRET, threshold: 1 },
      direct,
    );
    const members = ["café ☕", "𝄞 clef", "line\u2028sep", 'quote " and \\ back', "日本語のメンバー"];
    const events = members.map((member): webhooks.EventInput => ({
      type: "trending.rising",
      subject: { kind: "stream", name: "s" },
      data: { stream: "s", hour: T0 - (T0 % 3_600_000), member, count: 10, baseline: 1, ratio: 10, score: 5 },
      score: 5,
      key: `${T0 - (T0 % 3_600_000)}:${member}`,
    }));
    expect(await webhooks.emitMany(ctx, events)).toMatchObject({ queued: members.length });
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ delivered: members.length });
    const received = got("/utf8");
    expect(received.map((r) => JSON.parse(r.body).data.member).sort()).toEqual([...members].sort());
    for (const r of received) {
      expect(await verify(SECRET, r.body, r.headers["edgestats-signature"]!, T0)).toBe(true);
      expect(r.headers["edgestats-event"]).toBe("trending.rising");
    }
  });
});

describe("review 22: at least once, one id", () => {
  it("the same facts emitted while pending, and after delivery, are sent once", async () => {
    const ctx = lib.ctx(T0, "dup");
    await webhooks.put(
      ctx,
      "d",
      { url: `${receiver.url}/dup`, events: ["leaderboard.leader"], secret: SECRET },
      direct,
    );
    const first = await webhooks.emit(ctx, leader("b", "p1"));
    expect(first.queued).toBe(1);
    const again = await webhooks.emit(at(ctx, T0 + 1_000), leader("b", "p1"));
    expect(again).toMatchObject({ id: first.id, queued: 0, repeated: true });
    expect(await webhooks.deliverDue(at(ctx, T0 + 2_000), direct)).toMatchObject({ claimed: 1, delivered: 1 });
    const after = await webhooks.emit(at(ctx, T0 + 3_000), leader("b", "p1"));
    expect(after).toMatchObject({ id: first.id, queued: 0, repeated: true });
    expect(await webhooks.deliverDue(at(ctx, T0 + 4_000), direct)).toMatchObject({ claimed: 0 });
    expect(got("/dup")).toHaveLength(1);
    expect(JSON.parse(got("/dup")[0]!.body).id).toBe(first.id);
    expect(got("/dup")[0]!.headers["edgestats-delivery"]).toBe(`${first.id}:d`);
  });

  it("two webhooks of one event: the same body id, their own delivery ids, each signed with its secret", async () => {
    const ctx = lib.ctx(T0, "two");
    for (const name of ["a", "b"])
      await webhooks.put(
        ctx,
        name,
        { url: `${receiver.url}/two-${name}`, events: ["leaderboard.leader"], secret: `${SECRET}-${name}` },
        direct,
      );
    const { id, queued } = await webhooks.emit(ctx, leader("b", "p1"));
    expect(queued).toBe(2);
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ delivered: 2 });
    const [a] = got("/two-a");
    const [b] = got("/two-b");
    expect([JSON.parse(a!.body).id, JSON.parse(b!.body).id]).toEqual([id, id]);
    expect(a!.body).toBe(b!.body);
    expect([a!.headers["edgestats-delivery"], b!.headers["edgestats-delivery"]]).toEqual([`${id}:a`, `${id}:b`]);
    expect(await verify(`${SECRET}-a`, a!.body, a!.headers["edgestats-signature"]!, T0)).toBe(true);
    expect(await verify(`${SECRET}-a`, b!.body, b!.headers["edgestats-signature"]!, T0)).toBe(false);
    expect(await verify(`${SECRET}-b`, b!.body, b!.headers["edgestats-signature"]!, T0)).toBe(true);
  });
});

describe("review 22: DELETE with deliveries pending", () => {
  it("drops them (a retrying one too); a webhook created again is told the same event afresh", async () => {
    const ctx = lib.ctx(T0, "del");
    const hook = { url: `${receiver.url}/del`, events: ["leaderboard.leader" as const], secret: SECRET };
    await webhooks.put(ctx, "x", hook, direct);
    receiver.respondWith(500);
    await webhooks.emit(ctx, leader("b", "p1"));
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ claimed: 1, retrying: 1 });
    await webhooks.emit(ctx, leader("b", "p2"));
    await webhooks.emit(ctx, leader("b", "p3"));
    expect((await webhooks.remove(at(ctx, T0 + 1_000), "x")).deleted).toBe(true);
    expect(got("/del")).toHaveLength(1);
    // long after every retry would be due, nothing is claimed or sent
    expect(await webhooks.deliverDue(at(ctx, T0 + 3 * 3_600_000), direct)).toMatchObject({ claimed: 0 });
    expect(got("/del")).toHaveLength(1);
    // the same name again: told p1 afresh (another life), not swallowed as repeated
    const later = at(ctx, T0 + 3 * 3_600_000 + 1_000);
    await webhooks.put(later, "x", hook, direct);
    expect((await webhooks.emit(later, leader("b", "p1"))).queued).toBe(1);
    expect(await webhooks.deliverDue(later, direct)).toMatchObject({ claimed: 1, delivered: 1 });
    const bodies = got("/del").map((r) => JSON.parse(r.body).data.player);
    expect(bodies).toEqual(["p1", "p1"]);
    const log = (await webhooks.deliveries(later, "x")).deliveries;
    expect(log.map((d) => d.outcome)).toEqual(["delivered"]);
  });
});
