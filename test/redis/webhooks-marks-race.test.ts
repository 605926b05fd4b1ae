/**
 * Review 12's known limit, fixed: a webhook job run that read the webhooks before a concurrent
 * DELETE (or a PUT that created the name again or changed its filter) wrote that webhook's marks
 * after it, a `webhooks:{name}:marks` key without expiry leaked per race. The marks now say whose
 * they are (`of`, src/webhooks/marks.ts), checked in the HMGET detection already made. Real parts:
 * the library against the local Upstash server; the race is the job's two steps (its read of the
 * webhooks, `stored`, then detection on what it read) with the DELETE between them, times injected.
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import { detectPeaks, detectTrending } from "../../src/webhooks/detect.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { hookKeys, registryKeys } from "../../src/webhooks/keys.ts";
import { stored } from "../../src/webhooks/webhooks.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("wh-marks-race");
const T0 = Date.UTC(2026, 10, 24, 12, 0, 30);
const SECRET = "marks-race-secret-0123456789";
const direct = { allowLocalHttp: true };
const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });
const peakHook = (room: string): webhooks.WebhookInput => ({
  url: "http://127.0.0.1:9/peak",
  events: ["presence.peak"],
  filter: { room },
  secret: SECRET,
});
const trendHook = (stream: string): webhooks.WebhookInput => ({
  url: "http://127.0.0.1:9/trend",
  events: ["trending.entered", "trending.left"],
  filter: { stream },
  secret: SECRET,
});
const marksOf = (ctx: Ctx, name: string) => hookKeys(ctx.prefix, name).marks;
const exists = (ctx: Ctx, name: string) => command<number>(lib.target, "EXISTS", marksOf(ctx, name));
const fields = async (ctx: Ctx, name: string) => {
  const flat = await command<string[]>(lib.target, "HGETALL", marksOf(ctx, name));
  return Object.fromEntries(flat.flatMap((v, i) => (i % 2 === 0 ? [[v, flat[i + 1]]] : [])));
};

/** Requests and commands of `fn` through a tagged client on ctx's prefix. */
async function measured<T>(ctx: Ctx, fn: (c: Ctx) => Promise<T>): Promise<{ value: T; cost: [number, number] }> {
  const tag = `mr${Math.random().toString(36).slice(2, 8)}`;
  const c = { ...ctx, redis: createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}` }) };
  await resetStats(lib.target, tag);
  const value = await fn(c);
  const s = await statsOf(lib.target, tag);
  return { value, cost: [s.requests, s.commands] };
}

async function seedTrending(ctx: Ctx, stream: string) {
  const hour = Math.floor(ctx.now / HOUR) * HOUR;
  await trending.record(at(ctx, hour - 2 * HOUR + MINUTE), stream, [{ member: "a" }], { retentionHours: 50 });
  await trending.record(at(ctx, hour - HOUR + MINUTE), stream, [{ member: "b", count: 2 }], { retentionHours: 50 });
}

describe("a DELETE between a job run's read of the webhooks and its detection", () => {
  it("presence.peak: the deleted webhook's marks are not written back (no key left), nothing is queued", async () => {
    const ctx = lib.ctx(T0, "peak-del");
    await webhooks.put(ctx, "a", peakHook("r"), direct);
    await presence.heartbeat(at(ctx, T0 - 10_000), "r", ["u1", "u2"]);
    // warm the script (its first call loads it), on a webhook of another prefix
    const warm = lib.ctx(T0, "peak-del-warm");
    await webhooks.put(warm, "w", peakHook("r"), direct);
    await detectPeaks(warm, await stored(warm));

    const hooks = await stored(ctx); // the job has read the webhooks
    expect(await webhooks.remove(ctx, "a")).toMatchObject({ deleted: true });
    expect(await exists(ctx, "a")).toBe(0);
    const run = await measured(ctx, (c) => detectPeaks(c, hooks));
    // before the fix: the mark written back (`peak` → 2026-11-24:2), a key without expiry
    expect(await exists(ctx, "a")).toBe(0);
    expect(run.value).toEqual({ checked: 0, events: 0, queued: 0, full: 0 });
    // the race path alone pays the registry's HGET: EVALSHA, ZCARD, HMGET of the marks, HGET
    expect(run.cost).toEqual([1, 4]);
    expect(await command(lib.target, "ZCARD", registryKeys(ctx.prefix).pending)).toBe(0);
  });

  it("trending.entered/left: the deleted webhook's marks are not written back (no key left)", async () => {
    const ctx = lib.ctx(T0 + 5 * MINUTE, "trend-del");
    await webhooks.put(ctx, "t", trendHook("s"), direct);
    await seedTrending(ctx, "s");
    const hooks = await stored(ctx);
    await webhooks.remove(ctx, "t");
    const found = await detectTrending(ctx, hooks);
    expect(await exists(ctx, "t")).toBe(0);
    expect(found).toEqual({ checked: 0, events: 0, queued: 0, full: 0 });
  });

  it("and the name created again before the write: the new webhook's marks stay its own, blank", async () => {
    const ctx = lib.ctx(T0, "peak-recreate");
    await webhooks.put(ctx, "a", peakHook("r"), direct);
    await presence.heartbeat(at(ctx, T0 - 10_000), "r", ["u1", "u2"]);
    const hooks = await stored(ctx);
    await webhooks.remove(ctx, "a");
    const again = at(ctx, T0 + 20_000);
    const { webhook } = await webhooks.put(again, "a", peakHook("r"), direct);
    const blank = await fields(ctx, "a");
    expect(blank).toEqual({ of: `${webhook.createdAt}\n10\nroom\nr`, trending: "", trendingTold: "", peak: "" });
    // the stale run (the old life's createdAt): neither reads nor writes the new life's marks
    expect(await detectPeaks(ctx, hooks)).toMatchObject({ checked: 0, events: 0 });
    expect(await fields(ctx, "a")).toEqual(blank);
    // the new life's own run tells it today's peak afresh, and marks it
    expect(await detectPeaks(at(ctx, T0 + MINUTE), await stored(ctx))).toMatchObject({ checked: 1, queued: 1 });
    expect(await fields(ctx, "a")).toMatchObject({ of: blank.of, peak: "2026-11-24:2" });
  });

  it("a PUT to another room between the read and the write: the old room's peak is not marked for the new", async () => {
    const ctx = lib.ctx(T0, "peak-refilter");
    await webhooks.put(ctx, "a", peakHook("r1"), direct);
    await presence.heartbeat(at(ctx, T0 - 10_000), "r1", ["u1", "u2", "u3"]);
    await presence.heartbeat(at(ctx, T0 - 10_000), "r2", ["u1"]);
    const hooks = await stored(ctx);
    await webhooks.put(at(ctx, T0 + 1000), "a", peakHook("r2"), direct);
    expect(await detectPeaks(ctx, hooks)).toMatchObject({ checked: 0, events: 0 });
    expect(await fields(ctx, "a")).toMatchObject({ peak: "" });
    // r2's peak (1, under r1's 3) is told
    expect(await detectPeaks(at(ctx, T0 + MINUTE), await stored(ctx))).toMatchObject({ queued: 1 });
    expect(await fields(ctx, "a")).toMatchObject({ peak: "2026-11-24:1" });
  });
});

describe("marks written before they named their webhook (no `of`)", () => {
  it("are judged by the registry once, then the steady run costs what it did", async () => {
    const ctx = lib.ctx(T0, "legacy");
    const { webhook } = await webhooks.put(ctx, "a", peakHook("r"), direct);
    await presence.heartbeat(at(ctx, T0 - 10_000), "r", ["u1", "u2"]);
    await detectPeaks(ctx, await stored(ctx));
    // as an earlier release left them: the mark alone
    await command(lib.target, "HDEL", marksOf(ctx, "a"), "of", "trending", "trendingTold");
    expect(await fields(ctx, "a")).toEqual({ peak: "2026-11-24:2" });
    const hooks = await stored(ctx);
    // EVALSHA, ZCARD, HMGET, then once: HGET of the webhook, HSET of `of`; then BITFIELD (peak unchanged)
    const first = await measured(at(ctx, T0 + MINUTE), (c) => detectPeaks(c, hooks));
    expect(first.value).toMatchObject({ checked: 1, events: 0 });
    expect(first.cost).toEqual([1, 6]);
    expect(await fields(ctx, "a")).toEqual({ of: `${webhook.createdAt}\n10\nroom\nr`, peak: "2026-11-24:2" });
    const steady = await measured(at(ctx, T0 + 2 * MINUTE), (c) => detectPeaks(c, hooks));
    expect(steady.value).toMatchObject({ checked: 1, events: 0 });
    expect(steady.cost).toEqual([1, 4]);
  });

  it("of a webhook deleted since the read: not written back", async () => {
    const ctx = lib.ctx(T0 + 5 * MINUTE, "legacy-del");
    await webhooks.put(ctx, "t", trendHook("s"), direct);
    await seedTrending(ctx, "s");
    await command(lib.target, "HDEL", marksOf(ctx, "t"), "of");
    const hooks = await stored(ctx);
    await webhooks.remove(ctx, "t");
    expect(await detectTrending(ctx, hooks)).toMatchObject({ checked: 0 });
    expect(await exists(ctx, "t")).toBe(0);
  });

  it("a webhook of no detected event keeps none; subscribing later (same filter) names them at its first run", async () => {
    const ctx = lib.ctx(T0 + 5 * MINUTE, "later");
    const rising: webhooks.WebhookInput = { ...trendHook("s"), events: ["trending.rising"] };
    const { webhook } = await webhooks.put(ctx, "t", rising, direct);
    expect(await exists(ctx, "t")).toBe(0);
    await seedTrending(ctx, "s");
    // a replace: same filter and N, so its marks are untouched (none)
    await webhooks.put(ctx, "t", { ...trendHook("s"), events: ["trending.rising", "trending.entered"] }, direct);
    expect(await exists(ctx, "t")).toBe(0);
    expect(await detectTrending(ctx, await stored(ctx))).toMatchObject({ checked: 1, queued: 1 });
    expect(await fields(ctx, "t")).toMatchObject({
      of: `${webhook.createdAt}\n10\nstream\ns`,
      trending: expect.any(String),
    });
  });
});
