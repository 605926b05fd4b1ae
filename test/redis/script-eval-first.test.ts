/**
 * A script's first call in an isolate (its SHA-1 not computed here yet) is sent as EVAL with its
 * text, one request and one command, while the hash is computed beside it (src/redis/run.ts
 * `sendScript`; issue 14 point 6, cold start): no digest is awaited before the call, and a script
 * Redis does not know costs no NOSCRIPT round trip. The calls after it send EVALSHA; one answered
 * NOSCRIPT (Redis lost its scripts) is sent again with EVAL, and a write that INCRBYs still counts
 * once whichever way it went. Each script text here is new (a tag in a comment), so no earlier
 * test of this process has hashed it.
 */
import { describe, expect, it } from "vitest";
import { createRedis } from "../../src/redis/client.ts";
import { defineScript, scriptSha } from "../../src/redis/script.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const { target, prefix } = libraryTest("evalfirst");
const tag = prefix.replace(/\./g, "_");
const redis = createRedis({ url: target.url, token: `${target.token}.${tag}` });
const key = (name: string) => `${prefix}:${name}`;
let fresh = 0;

/** A write that INCRBYs: run twice, it would count twice. */
const adder = () =>
  defineScript({
    name: "test.add",
    write: true,
    keys: ["counter"],
    args: ["by"],
    lua: `
-- ${prefix}:${fresh++}
return redis.call('INCRBY', counter, by)
`,
  });

/** A read whose pipelined command after it (an INCR) must run once: `runPiped(…, once)`. */
const reader = () =>
  defineScript({
    name: "test.read",
    write: false,
    keys: ["counter"],
    args: [],
    lua: `
-- ${prefix}:${fresh++}
return redis.call('GET', counter)
`,
  });

/** The requests and commands of `call`, as the local server counted them. */
async function costOf(call: () => Promise<unknown>) {
  await resetStats(target, tag);
  await call();
  const { requests, byCommand } = await statsOf(target, tag);
  return { requests, byCommand };
}

describe("a script's first call in an isolate", () => {
  it("is one EVAL, then EVALSHA with the hash computed meanwhile; a write applies once", async () => {
    const add = adder();
    const counter = key("a");
    expect(await costOf(() => add.run(redis, { counter }, { by: 5 }))).toEqual({
      requests: 1,
      byCommand: { eval: 1, incrby: 1 },
    });
    expect(await command(target, "GET", counter)).toBe("5");
    // the hash is Redis's own: the second call finds the script the first one loaded
    expect(await command(target, "SCRIPT", "EXISTS", await scriptSha(add))).toEqual([1]);
    expect(await costOf(() => add.run(redis, { counter }, { by: 2 }))).toEqual({
      requests: 1,
      byCommand: { evalsha: 1, incrby: 1 },
    });
    expect(await command(target, "GET", counter)).toBe("7");
  });

  it("once hashed, falls back from NOSCRIPT to EVAL and still counts once", async () => {
    const add = adder();
    const counter = key("b");
    await scriptSha(add); // hashed, but Redis has never seen it: EVALSHA is answered NOSCRIPT
    expect(await costOf(() => add.run(redis, { counter }, { by: 3 }))).toEqual({
      requests: 2,
      byCommand: { evalsha: 1, eval: 1, incrby: 1 },
    });
    expect(await command(target, "GET", counter)).toBe("3");
  });

  it("sends a read's pipeline with EVAL first; a NOSCRIPT answer later does not run `once` commands twice", async () => {
    const read = reader();
    const counter = key("c");
    const bump = key("bumps");
    await command(target, "SET", counter, "9");
    const piped = () => read.runPiped<string>(redis, { counter }, {}, (pipeline) => pipeline.incr(bump), true);
    let first: unknown;
    expect(await costOf(async () => (first = await piped()))).toEqual({
      requests: 1,
      byCommand: { eval: 1, get: 1, incr: 1 },
    });
    expect(first).toEqual({ value: "9", after: [1] });
    await scriptSha(read);
    // a script text Redis has not seen, under a hash this isolate already knows
    const again = reader();
    await scriptSha(again);
    let second: unknown;
    const cost = await costOf(async () => {
      second = await again.runPiped<string>(redis, { counter }, {}, (pipeline) => pipeline.incr(bump), true);
    });
    expect(cost).toEqual({ requests: 2, byCommand: { evalsha: 1, eval: 1, get: 1, incr: 1 } });
    expect(second).toEqual({ value: "9", after: [2] });
    expect(await command(target, "GET", bump)).toBe("2");
  });
});
