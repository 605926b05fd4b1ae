/**
 * Many clients at once against the write path every feature uses: a Lua write
 * script under the idempotency prelude (`script.run`), through @upstash/redis and
 * the local Upstash server. Totals must equal what was acknowledged, and one
 * Idempotency-Key must apply exactly once however many copies race.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConflictError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { defineScript, RECORD_MAX_RESULT_BYTES, SummarisedReplay, type Idempotency } from "../../src/redis/script.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const { target, prefix, redis } = libraryTest("concurrency", { timeoutMs: 10_000 });

// The shape of every feature's increment: ZINCRBY plus a registry entry, in one script.
const incr = defineScript({
  name: "test.incr",
  write: true,
  keys: ["board", "registry"],
  args: ["member", "by"],
  lua: `
local score = redis.call('ZINCRBY', board, by, member)
redis.call('SADD', registry, member)
return score
`,
});

function idem(key: string, fingerprint = "fp"): Idempotency {
  return { key: keyOf(prefix, "idem", key), fingerprint };
}

async function scoreOf(board: string, member: string): Promise<number> {
  return Number((await command<string | null>(target, "ZSCORE", board, member)) ?? 0);
}

describe("parallel increments", () => {
  it("40 clients x 25 increments on 5 shared members: stored totals equal acknowledged totals", async () => {
    const board = keyOf(prefix, "board", "shared");
    const registry = keyOf(prefix, "registry", "shared");
    const members = ["a", "b", "c", "d", "e"];
    const acknowledged = new Map<string, number>(members.map((m) => [m, 0]));
    await Promise.all(
      Array.from({ length: 40 }, async (_, client) => {
        for (let i = 0; i < 25; i++) {
          const member = members[(client + i) % members.length] ?? "a";
          const by = ((client * 31 + i * 7) % 9) - 2; // negative, zero and positive steps
          await incr.run(redis, { board, registry }, { member, by });
          acknowledged.set(member, (acknowledged.get(member) ?? 0) + by);
        }
      }),
    );
    for (const member of members) expect(await scoreOf(board, member)).toBe(acknowledged.get(member));
    expect((await command<string[]>(target, "SMEMBERS", registry)).sort()).toEqual(members);
  });

  it("30 copies of one Idempotency-Key racing apply exactly once and all answer the first result", async () => {
    const board = keyOf(prefix, "board", "race");
    const registry = keyOf(prefix, "registry", "race");
    const results = await Promise.all(
      Array.from({ length: 30 }, () =>
        incr.run<string>(redis, { board, registry }, { member: "m", by: 5 }, idem("race")),
      ),
    );
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(new Set(results.map((r) => r.value))).toEqual(new Set(["5"]));
    expect(await scoreOf(board, "m")).toBe(5);
  });

  it("the same key with different bodies racing: one applies, every other is a conflict", async () => {
    const board = keyOf(prefix, "board", "conflict");
    const registry = keyOf(prefix, "registry", "conflict");
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        incr.run<string>(redis, { board, registry }, { member: "m", by: i + 1 }, idem("conflict", `fp-${i}`)),
      ),
    );
    const applied = outcomes.filter((o) => o.status === "fulfilled");
    expect(applied).toHaveLength(1);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(ConflictError);
    const value = applied[0]?.status === "fulfilled" ? applied[0].value.value : "missing";
    expect(await scoreOf(board, "m")).toBe(Number(value));
  });

  it("keeps an idempotency record 24 h and only for writes that happened", async () => {
    const board = keyOf(prefix, "board", "ttl");
    const registry = keyOf(prefix, "registry", "ttl");
    await incr.run(redis, { board, registry }, { member: "m", by: 1 }, idem("ttl"));
    const ttl = await command<number>(target, "TTL", keyOf(prefix, "idem", "ttl"));
    expect(ttl).toBeGreaterThan(86_400 - 60);
    expect(ttl).toBeLessThanOrEqual(86_400);
    // A script that fails (ZINCRBY on a non-number) writes no record, so a corrected retry applies.
    await expect(
      incr.run(redis, { board, registry }, { member: "m", by: "not-a-number" }, idem("failed")),
    ).rejects.toThrow();
    expect(await command<number>(target, "EXISTS", keyOf(prefix, "idem", "failed"))).toBe(0);
    const retried = await incr.run<string>(redis, { board, registry }, { member: "m", by: 2 }, idem("failed"));
    expect(retried).toEqual({ value: "3", replayed: false });
  });

  it("property: any interleaving of keyed and unkeyed increments counts each key once", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            key: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
            by: fc.integer({ min: -5, max: 20 }),
          }),
          {
            minLength: 1,
            maxLength: 40,
          },
        ),
        async (ops) => {
          run++;
          const board = keyOf(prefix, "board", "prop", run);
          const registry = keyOf(prefix, "registry", "prop", run);
          // One body per key: a client retrying a key resends the same request.
          const bodyOfKey = new Map<number, number>();
          for (const op of ops) if (op.key !== undefined && !bodyOfKey.has(op.key)) bodyOfKey.set(op.key, op.by);
          await Promise.all(
            ops.map((op) => {
              const by = op.key === undefined ? op.by : (bodyOfKey.get(op.key) ?? 0);
              return incr.run(
                redis,
                { board, registry },
                { member: "m", by },
                op.key === undefined ? undefined : idem(`prop:${run}:${op.key}`, String(by)),
              );
            }),
          );
          const unkeyed = ops.filter((op) => op.key === undefined).reduce((sum, op) => sum + op.by, 0);
          const keyed = [...bodyOfKey.values()].reduce((sum, by) => sum + by, 0);
          expect(await scoreOf(board, "m")).toBe(unkeyed + keyed);
        },
      ),
      { numRuns: 25, seed: 9 },
    );
    expect((await keysUnder(target, `${prefix}:idem:prop`)).length).toBeGreaterThan(0);
  });
});

/*
 * A write whose result is known before it runs (`resultUpFront`, histograms.observe's shape): the
 * prelude records that result in a `SET … NX` before the body runs (a `GET` reads an earlier one), and must
 * take it back wherever the write did not happen as recorded.
 */
const add = defineScript({
  name: "test.add",
  write: true,
  keys: ["board"],
  args: ["max", "...members"],
  resultUpFront: "{added = #members}",
  refusals: { too_many: (r) => new Error(`too many: ${String(r.count)}`) },
  lua: `
if #members > tonumber(max) then return {refused = 'too_many', count = #members} end
for _, m in ipairs(members) do redis.call('ZINCRBY', board, 1, m) end
return {added = #members}
`,
});

// Declares one result, returns another: a bug the prelude must catch.
const liar = defineScript({
  name: "test.liar",
  write: true,
  keys: ["board"],
  args: ["member"],
  resultUpFront: "{added = 1}",
  lua: `
redis.call('ZINCRBY', board, 1, member)
return {added = 2}
`,
});

// Its result (the members it was given) is known up front and can exceed RECORD_MAX_RESULT_BYTES.
const echo = defineScript({
  name: "test.echo",
  write: true,
  keys: ["board"],
  args: ["...members"],
  resultUpFront: "members",
  lua: `
for _, m in ipairs(members) do redis.call('ZINCRBY', board, 1, m) end
return members
`,
});

describe("a write whose result is known up front", () => {
  const tag = `upfront${Math.random().toString(36).slice(2, 8)}`;
  const counted = createRedis({ url: target.url, token: `${target.token}.${tag}` });
  const board = keyOf(prefix, "board", "upfront");
  const record = (key: string) => keyOf(prefix, "idem", key);

  async function commandsOf(fn: () => Promise<unknown>): Promise<Record<string, number>> {
    await resetStats(target, tag);
    await fn().catch(() => undefined);
    return (await statsOf(target, tag)).byCommand;
  }

  it("costs one command over the unkeyed write (SET NX), replays (SET NX, GET) and conflicts as before", async () => {
    await add.run(counted, { board }, { max: 10, members: ["warm"] });
    const plain = await commandsOf(() => add.run(counted, { board }, { max: 10, members: ["a"] }));
    const keyed = await commandsOf(() => add.run(counted, { board }, { max: 10, members: ["a"] }, idem("up-1")));
    expect(keyed).toEqual({ ...plain, set: 1 });
    expect(await command<string>(target, "GET", record("up-1"))).toBe('fp\n"value":{"added":1}');
    const ttl = await command<number>(target, "TTL", record("up-1"));
    expect(ttl).toBeGreaterThan(86_400 - 60);
    expect(ttl).toBeLessThanOrEqual(86_400);
    let replay: unknown;
    const replayCost = await commandsOf(async () => {
      replay = await add.run(counted, { board }, { max: 10, members: ["a"] }, idem("up-1"));
    });
    expect(replay).toEqual({ value: { added: 1 }, replayed: true });
    expect(replayCost).toEqual({ evalsha: 1, set: 1, get: 1 });
    await expect(
      add.run(counted, { board }, { max: 10, members: ["b"] }, idem("up-1", "other")),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(await scoreOf(board, "a")).toBe(2);
    expect(await scoreOf(board, "b")).toBe(0);
  });

  it("a refusal leaves no record (SET then DEL), and its corrected retry applies", async () => {
    const cost = await commandsOf(() => add.run(counted, { board }, { max: 1, members: ["r", "s"] }, idem("up-ref")));
    expect(cost).toEqual({ evalsha: 1, set: 1, del: 1 });
    await expect(add.run(redis, { board }, { max: 1, members: ["r", "s"] }, idem("up-ref"))).rejects.toThrow(
      "too many: 2",
    );
    expect(await command<number>(target, "EXISTS", record("up-ref"))).toBe(0);
    expect(await scoreOf(board, "r")).toBe(0);
    const retried = await add.run(redis, { board }, { max: 2, members: ["r", "s"] }, idem("up-ref"));
    expect(retried).toEqual({ value: { added: 2 }, replayed: false });
    expect(await scoreOf(board, "r")).toBe(1);
  });

  it("an error in the body leaves no record and reaches the caller as it does without a key", async () => {
    const broken = keyOf(prefix, "board", "broken");
    await command(target, "SET", broken, "a string, not a sorted set");
    const errorOf = async (idempotency?: Idempotency) => {
      const outcome = await add.run(redis, { board: broken }, { max: 10, members: ["x"] }, idempotency).then(
        () => new Error("resolved"),
        (e: unknown) => e as Error,
      );
      // Redis's message, up to where the line that raised it and the command sent are named
      return { type: outcome.constructor, name: outcome.name, message: outcome.message.split(" script: ")[0] };
    };
    const without = await errorOf();
    expect(without.message).toBe("WRONGTYPE Operation against a key holding the wrong kind of value");
    expect(await errorOf(idem("up-err"))).toEqual(without);
    expect(await command<number>(target, "EXISTS", record("up-err"))).toBe(0);
    // fixed, the retry with the same key applies
    await command(target, "DEL", broken);
    const retried = await add.run(redis, { board: broken }, { max: 10, members: ["x"] }, idem("up-err"));
    expect(retried).toEqual({ value: { added: 1 }, replayed: false });
  });

  it("a body returning another result than declared fails loudly; the record keeps what it did return", async () => {
    await expect(liar.run(redis, { board }, { member: "l" }, idem("up-liar"))).rejects.toThrow(
      /test\.liar returned \{"added":2\}, not its resultUpFront \{"added":1\}/,
    );
    expect(await scoreOf(board, "l")).toBe(1);
    // the write happened: its retry is a replay of what the body returned, not a second write
    const retried = await liar.run(redis, { board }, { member: "l" }, idem("up-liar"));
    expect(retried).toEqual({ value: { added: 2 }, replayed: true });
    expect(await scoreOf(board, "l")).toBe(1);
  });

  it("a result over RECORD_MAX_RESULT_BYTES is recorded as its summary, as for any write", async () => {
    const members = Array.from({ length: 100 }, (_, i) => `member-${i}-${"x".repeat(30)}`);
    const first = await echo.run<string[]>(redis, { board }, { members }, idem("up-big"));
    expect(first.value).toEqual(members);
    const encoded = JSON.stringify(members);
    expect(encoded.length).toBeGreaterThan(RECORD_MAX_RESULT_BYTES);
    const replay = await echo.run(redis, { board }, { members }, idem("up-big")).catch((e: unknown) => e);
    expect(replay).toBeInstanceOf(SummarisedReplay);
    expect((replay as SummarisedReplay).summary).toEqual({
      bytes: encoded.length,
      sha1: createHash("sha1").update(encoded).digest("hex"),
      items: 100,
    });
    expect(await scoreOf(board, members[0] ?? "")).toBe(1);
  });

  it("30 copies of one key racing apply exactly once", async () => {
    const race = keyOf(prefix, "board", "upfront-race");
    const results = await Promise.all(
      Array.from({ length: 30 }, () => add.run(redis, { board: race }, { max: 10, members: ["m"] }, idem("up-race"))),
    );
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    for (const r of results) expect(r.value).toEqual({ added: 1 });
    expect(await scoreOf(race, "m")).toBe(1);
  });
});
