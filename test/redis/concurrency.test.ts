/**
 * Many clients at once against the write path every feature uses: a Lua write
 * script under the idempotency prelude (`script.run`), through @upstash/redis and
 * the local Upstash server. Totals must equal what was acknowledged, and one
 * Idempotency-Key must apply exactly once however many copies race.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConflictError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import { defineScript, type Idempotency } from "../../src/redis/script.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

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
