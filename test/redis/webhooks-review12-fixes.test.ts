/**
 * The fixes of review 12's webhook findings, at their edges (real Redis behind the local Upstash
 * server, real receivers, time injected): a DELETE drops its own queued deliveries and no other
 * webhook's (names that end alike), an attempt of a deleted life settles nothing of the life created
 * again under its name, and trending.rising's told set lives only about its hour.
 */
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { registryKeys, risingToldKey } from "../../src/webhooks/keys.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";
import { eventually, receiverForTests, startGate } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("wh-rv12-fix");
const T0 = Date.UTC(2026, 10, 24, 12, 0, 30);
const SECRET = "review12-fix-secret-0123456789";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true };
const directConfig = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true" });

const receiver = receiverForTests();

const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });
const gotAt = (path: string) => receiver.received.filter((r) => r.path === path);
const leader = (name: string, url: string): webhooks.WebhookInput => ({
  url,
  events: ["leaderboard.leader"],
  filter: { board: name },
  secret: SECRET,
});
const event = (board: string, key: string) => ({
  type: "leaderboard.leader" as const,
  subject: { kind: "board" as const, name: board },
  data: { board },
  key,
});

describe("DELETE drops the webhook's queued deliveries", () => {
  it("all of its own, none of webhooks whose names end alike", async () => {
    const ctx = lib.ctx(T0, "purge");
    const names = ["a", "ba", "a.a", "b"];
    for (const name of names) await webhooks.put(ctx, name, leader("x", `${receiver.url}/purge-${name}`), direct);
    const batch = Array.from({ length: 300 }, (_, i) => event("x", `k${i}`));
    expect((await webhooks.emitMany(ctx, batch)).queued).toBe(300 * names.length);
    const reg = registryKeys(ctx.prefix);
    expect(await command(lib.target, "ZCARD", reg.pending)).toBe(1200);
    expect((await webhooks.remove(at(ctx, T0 + 1000), "a")).deleted).toBe(true);
    expect(await command(lib.target, "ZCARD", reg.pending)).toBe(900);
    expect(await command(lib.target, "HLEN", reg.deliveries)).toBe(900);
    const left = (await command<string[]>(lib.target, "ZRANGE", reg.pending, 0, -1)).map((id) => id.split(":")[1]);
    expect(new Set(left)).toEqual(new Set(["ba", "a.a", "b"]));
    // deleting one that is gone drops nothing
    expect((await webhooks.remove(at(ctx, T0 + 2000), "a")).deleted).toBe(false);
    expect(await command(lib.target, "ZCARD", reg.pending)).toBe(900);
  });
});

describe("an attempt in flight when its webhook is deleted and created again", () => {
  it("settles nothing of the new life: its delivery of the same event stays, is sent, and logged once", async () => {
    const gate = await startGate();
    try {
      const ctx = lib.ctx(T0, "inflight-same");
      await webhooks.put(ctx, "a", leader("y", gate.url), direct);
      expect((await webhooks.emit(ctx, event("y", "same"))).queued).toBe(1);
      const run = webhooks.deliverDue(at(ctx, T0 + 1000), direct);
      await eventually(() => gate.arrived);
      await webhooks.remove(at(ctx, T0 + 2000), "a");
      await webhooks.put(at(ctx, T0 + 2000), "a", leader("y", `${receiver.url}/inflight-same`), direct);
      expect((await webhooks.emit(at(ctx, T0 + 2000), event("y", "same"))).queued).toBe(1);
      // the old life's attempt succeeds: it must not settle (remove) the new life's delivery
      gate.release(200);
      expect(await run).toMatchObject({ claimed: 1, delivered: 0, retrying: 0, failed: 0 });
      expect((await webhooks.deliveries(at(ctx, T0 + 3000), "a")).deliveries).toEqual([]);
      expect(await webhooks.deliverDue(at(ctx, T0 + 3000), direct)).toMatchObject({ claimed: 1, delivered: 1 });
      expect(gotAt("/inflight-same")).toHaveLength(1);
      expect((await webhooks.deliveries(at(ctx, T0 + 4000), "a")).deliveries).toMatchObject([
        { attempt: 1, outcome: "delivered" },
      ]);
    } finally {
      await gate.close();
    }
  });
});

describe("trending.rising's told set", () => {
  it("is the hour's, and expires within two hours of the hour's start", async () => {
    const hour = Math.floor(T0 / HOUR) * HOUR;
    const ctx = lib.ctx(hour + 10 * MINUTE, "rising-set");
    await webhooks.put(
      ctx,
      "r",
      { url: `${receiver.url}/rising-set`, events: ["trending.rising"], threshold: 1, secret: SECRET },
      direct,
    );
    await trending.record(at(ctx, hour + MINUTE), "hot", [{ member: "m", count: 50 }], { retentionHours: 50 });
    const run = await webhooks.webhooksJob(ctx, directConfig);
    expect(run).toMatchObject({ risingQueued: 1, delivered: 1 });
    const key = risingToldKey(ctx.prefix, hour / HOUR);
    expect(await command(lib.target, "SCARD", key)).toBe(1);
    const ttl = await command<number>(lib.target, "PTTL", key);
    expect(ttl).toBeGreaterThan(HOUR + 49 * MINUTE - 5000);
    expect(ttl).toBeLessThanOrEqual(HOUR + 50 * MINUTE);
    // a later run of the hour finds it again: told already
    expect(await webhooks.webhooksJob(at(ctx, hour + 20 * MINUTE), directConfig)).toMatchObject({
      risingRepeated: 1,
      risingQueued: 0,
    });
  });
});
