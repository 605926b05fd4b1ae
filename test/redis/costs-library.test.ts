/**
 * What library calls cost (test/costs/library.ts), measured with the local
 * Upstash server's per-token counters, through a client with Redis.fromEnv()'s
 * defaults, at a fixed mid-hour time. Each call is warmed first so scripts are cached.
 */
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { Edgestats } from "../../src/index.ts";
import { area } from "../costs/library.ts";
import { costOf, expected } from "../costs/types.ts";
import { libraryTest } from "../helpers/library.ts";
import { resetStats, statsOf } from "../helpers/upstash-rest.ts";

// Upstash's own client (the library's users' default), its requests counted under a tag of their own
const { target, prefix } = libraryTest("libcost");
const tag = `libcost${Math.random().toString(36).slice(2, 8)}`;
// A fixed mid-hour time: in an hour's last 5 minutes a trending write also deletes next hour's unions (one more command).
const stats = new Edgestats({
  redis: new Redis({ url: target.url, token: `${target.token}.${tag}` }),
  prefix,
  clock: () => Date.UTC(2026, 10, 23, 12, 30),
});
const rows = area.rows;

async function cost(fn: () => Promise<unknown>) {
  await resetStats(target, tag);
  await fn();
  const s = await statsOf(target, tag);
  return costOf({ requests: s.requests, commands: s.commands });
}

describe("library costs", () => {
  it("trending record and top", async () => {
    const s = stats.trending("s");
    await s.record("warm");
    expect(await cost(() => s.record("a"))).toEqual(expected(rows.record!));
    await s.top({ n: 10 });
    expect(await cost(() => s.top({ n: 10 }))).toEqual(expected(rows.top!));
  });

  it("counter incr, with and without an idempotency key", async () => {
    const c = stats.counter("c");
    await c.incr("m");
    expect(await cost(() => c.incr("m"))).toEqual(expected(rows.incr!));
    await c.incr("m", 1, { idempotencyKey: "warm" });
    expect(await cost(() => c.incr("m", 1, { idempotencyKey: "k1" }))).toEqual(expected(rows.incrIdempotent!));
    expect(await cost(() => c.incr("m", 1, { idempotencyKey: "k1" }))).toEqual(expected(rows.incrReplay!));
  });

  it("presence heartbeat and leaderboard increment", async () => {
    const room = stats.presence("r");
    await room.heartbeat("u");
    expect(await cost(() => room.heartbeat("u"))).toEqual(expected(rows.heartbeat!));
    const board = stats.leaderboard("b");
    await board.join("p", { name: "P" });
    await board.increment("p", 1);
    expect(await cost(() => board.increment("p", 5))).toEqual(expected(rows.increment!));
  });
});
