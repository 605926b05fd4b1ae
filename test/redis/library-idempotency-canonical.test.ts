/**
 * The library's `idempotencyKey` means by "the same arguments" what the service's
 * `Idempotency-Key` means by "the same body" (test/worker/idempotency-canonical.test.ts): the same
 * JSON value. A call carries two digests, `fingerprint` (SHA-256 of `JSON.stringify(args)`, what
 * every version has hashed) and `canonical` (of its canonical JSON, src/redis/canonical-json.ts),
 * and matches a record when either does (SAME_REQUEST_LUA). So a retry that builds its arguments
 * in another key order, or with an `undefined` field, is a replay; another value is still a
 * ConflictError; and records of the fingerprint-only version still match, both ways.
 * Real redis-server behind the local Upstash server.
 */
import { createHash } from "node:crypto";
import { Redis } from "@upstash/redis";
import { describe, expect, it } from "vitest";
import { canonicalJson as httpCanonicalJson } from "../../functions/middleware/idempotency.ts";
import * as counters from "../../src/counters/counters.ts";
import { ConflictError, Edgestats } from "../../src/index.ts";
import { idempotencyOf } from "../../src/library/shared.ts";
import { canonicalJson } from "../../src/redis/canonical-json.ts";
import type { Idempotency } from "../../src/redis/script.ts";
import { area } from "../costs/library.ts";
import { costOf, expected } from "../costs/types.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("libidemc");
const now = Date.UTC(2026, 10, 27, 12, 30);
const stats = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => now });
const hex = (text: string) => createHash("sha256").update(text).digest("hex");

/** What the fingerprint-only version sent for the same call: the same key and fingerprint, no canonical digest. */
async function previousVersion(scope: string, idempotencyKey: string, args: unknown): Promise<Idempotency> {
  const now = await idempotencyOf(lib.ctx(0), scope, { idempotencyKey }, args);
  if (!now) throw new Error("no idempotency record");
  return { key: now.key, fingerprint: now.fingerprint };
}

describe("the library's idempotency digests", () => {
  it("the fingerprint is still SHA-256 of JSON.stringify(args); the canonical digest is of the same JSON value, sorted", async () => {
    const args = [{ member: "m", by: 2, period: undefined }];
    const idem = await idempotencyOf(lib.ctx(0), "counter.incr c", { idempotencyKey: "k" }, args);
    expect(idem?.fingerprint).toBe(hex('[{"member":"m","by":2}]'));
    expect(idem?.canonical).toBe(hex('[{"by":2,"member":"m"}]'));
    // one canonicalisation for both paths, not a copy that could drift
    expect(httpCanonicalJson).toBe(canonicalJson);
  });
});

describe("a retry with the same JSON value is a replay", () => {
  it("counter incr: keys in another order replay the first result and count once", async () => {
    const c = stats.counter("order");
    const first = await c.incr([{ by: 2, member: "m" }], undefined, { idempotencyKey: "o-1" });
    expect(first).toEqual({ results: [{ member: "m", score: 2 }], replayed: false });
    expect(await c.incr([{ member: "m", by: 2 }], undefined, { idempotencyKey: "o-1" })).toEqual({
      results: [{ member: "m", score: 2 }],
      replayed: true,
    });
    expect((await c.member("m")).score).toBe(2);
  });

  it("an undefined field (dropped by JSON) is the same arguments, in the item and in a leaderboard change", async () => {
    const c = stats.counter("undef");
    await c.incr({ member: "m", by: 3 }, undefined, { idempotencyKey: "u-1" });
    expect(await c.incr({ member: "m", by: 3, period: undefined }, undefined, { idempotencyKey: "u-1" })).toEqual({
      results: [{ member: "m", score: 3 }],
      replayed: true,
    });
    expect((await c.member("m")).score).toBe(3);

    const board = stats.leaderboard("undef");
    await board.join("p", { name: "P" });
    const set = await board.score("p", { set: 7, mode: "best" }, { idempotencyKey: "s-1" });
    expect(set.replayed).toBe(false);
    const again = await board.score("p", { mode: "best", set: 7 }, { idempotencyKey: "s-1" });
    expect(again).toEqual({ ...set, replayed: true });
  });

  it("leaderboard join: nested meta in another key order replays; the stored meta is the first call's", async () => {
    const board = stats.leaderboard("meta");
    const first = await board.join(
      "p",
      { name: "P", meta: { a: 1, b: { x: true, y: [1, 2] } } },
      { idempotencyKey: "j" },
    );
    const retry = await board.join(
      "p",
      { meta: { b: { y: [1, 2], x: true }, a: 1 }, name: "P" },
      { idempotencyKey: "j" },
    );
    expect(retry).toEqual({ ...first, replayed: true });
  });

  it("another value under the same key is still a ConflictError and writes nothing (array order is a value)", async () => {
    const c = stats.counter("conflict");
    await c.incr([{ by: 2, member: "a" }, { member: "b" }], undefined, { idempotencyKey: "c-1" });
    for (const other of [
      [{ member: "a", by: 3 }, { member: "b" }], // another number
      [{ member: "b" }, { member: "a", by: 2 }], // the same items in another order: another request
      [
        { member: "a", by: 2 },
        { member: "b", by: 1 },
      ], // an explicit default is another JSON value
    ]) {
      await expect(c.incr(other, undefined, { idempotencyKey: "c-1" }), JSON.stringify(other)).rejects.toBeInstanceOf(
        ConflictError,
      );
    }
    expect((await c.top()).items.map((i) => [i.member, i.score])).toEqual([
      ["a", 2],
      ["b", 1],
    ]);
  });

  it("the record keeps the canonical digest beside the fingerprint (the service's record format)", async () => {
    const c = stats.counter("record");
    const args = [{ member: "m", by: 4 }];
    await c.incr(args, undefined, { idempotencyKey: "r-1" });
    const idem = await idempotencyOf(lib.ctx(0), "counter.incr record", { idempotencyKey: "r-1" }, args);
    const record = await command<string>(lib.target, "GET", idem!.key);
    expect(record.startsWith(`${hex(JSON.stringify(args))}\n"c":"${hex('[{"by":4,"member":"m"}]')}",`)).toBe(true);
  });

  it("costs what a replay costs: a key-order retry is one round trip of 2 commands (test/costs/library.ts)", async () => {
    const tag = `libidemc${Math.random().toString(36).slice(2, 8)}`;
    const counted = new Edgestats({
      redis: new Redis({ url: lib.target.url, token: `${lib.target.token}.${tag}` }),
      prefix: lib.prefix,
      clock: () => now,
    });
    const c = counted.counter("cost");
    // warmed on the same member: the rows are of an existing member (a new one is a ZADD more)
    await c.incr("m", 1, { idempotencyKey: "warm" });
    const cost = async (fn: () => Promise<unknown>) => {
      await resetStats(lib.target, tag);
      await fn();
      const s = await statsOf(lib.target, tag);
      return costOf({ requests: s.requests, commands: s.commands });
    };
    expect(await cost(() => c.incr({ by: 1, member: "m" }, undefined, { idempotencyKey: "k" }))).toEqual(
      expected(area.rows.incrIdempotent!),
    );
    expect(await cost(() => c.incr({ member: "m", by: 1 }, undefined, { idempotencyKey: "k" }))).toEqual(
      expected(area.rows.incrReplay!),
    );
    expect((await c.member("m")).score).toBe(2);
  });
});

describe("across an upgrade, either way (records of the fingerprint-only version)", () => {
  it("a record of the previous version is replayed by this one for the same arguments", async () => {
    const args = [{ member: "m", by: 5 }];
    const old = await previousVersion("counter.incr old-new", "k", args);
    const first = await counters.increment(lib.ctx(now), "old-new", args, old);
    expect(first.replayed).toBe(false);
    const retry = await stats.counter("old-new").incr(args, undefined, { idempotencyKey: "k" });
    expect(retry).toEqual({ ...first, replayed: true });
    // its canonical digest matches the old record's fingerprint when that text was canonical already
    const sorted = [{ by: 2, member: "s" }];
    await counters.increment(
      lib.ctx(now),
      "old-sorted",
      sorted,
      await previousVersion("counter.incr old-sorted", "k", sorted),
    );
    expect(
      await stats.counter("old-sorted").incr([{ member: "s", by: 2 }], undefined, { idempotencyKey: "k" }),
    ).toEqual({
      results: [{ member: "s", score: 2 }],
      replayed: true,
    });
    await expect(
      stats.counter("old-new").incr([{ member: "m", by: 6 }], undefined, { idempotencyKey: "k" }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect((await stats.counter("old-new").member("m")).score).toBe(5);
  });

  it("a record of this version is replayed by the previous one for the same arguments", async () => {
    const args = [{ member: "m", by: 6 }];
    const first = await stats.counter("new-old").incr(args, undefined, { idempotencyKey: "k" });
    const old = await previousVersion("counter.incr new-old", "k", args);
    expect(await counters.increment(lib.ctx(now), "new-old", args, old)).toEqual({ ...first, replayed: true });
    const other = await previousVersion("counter.incr new-old", "k", [{ member: "m", by: 7 }]);
    await expect(counters.increment(lib.ctx(now), "new-old", [{ member: "m", by: 7 }], other)).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect((await stats.counter("new-old").member("m")).score).toBe(6);
  });

  it("the limit, as on the service: a previous version's record of unsorted text has no canonical digest to match a reordered retry", async () => {
    // {"member","by"} is not canonical text, so the old record holds no digest a reordered retry has;
    // the same bytes still match it (above), and records written from now on match either order.
    const args = [{ member: "m", by: 2 }];
    await counters.increment(
      lib.ctx(now),
      "old-limit",
      args,
      await previousVersion("counter.incr old-limit", "k", args),
    );
    await expect(
      stats.counter("old-limit").incr([{ by: 2, member: "m" }], undefined, { idempotencyKey: "k" }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect((await stats.counter("old-limit").member("m")).score).toBe(2);
  });
});
