/**
 * defineScript end to end against the local Upstash server: named keys and arguments, lists of
 * keys and arguments of any length (empty too), shared Lua with parameters, the refusal channel
 * (typed error, no idempotency record), the write prelude's replay, and a read script with commands
 * after it in the same request (runPiped).
 */
import { Redis } from "@upstash/redis";
import { afterAll, describe, expect, it } from "vitest";
import { EdgestatsError } from "../../src/errors.ts";
import { createRedis } from "../../src/redis/client.ts";
import { canPipeline, defineLua, defineScript } from "../../src/redis/script.ts";
import { command, deleteUnder, requireTarget, uniquePrefix } from "../helpers/upstash-rest.ts";

const target = requireTarget(process.env.EDGESTATS_UPSTASH_URL, process.env.EDGESTATS_UPSTASH_TOKEN);
const redis = new Redis({ url: target.url, token: target.token, automaticDeserialization: false });
const prefix = uniquePrefix("contract");
afterAll(() => deleteUnder(target, prefix));

/** The made-up scripts' typed error: codes of their own, which none of the service's errors takes. */
class TestRefusal extends EdgestatsError<"too_big" | "declined"> {}

const SUM = defineLua(
  "test.sum",
  ["sum"],
  `
local function sum(list)
  local total = 0
  for _, v in ipairs(list) do total = total + tonumber(v) end
  return total
end`,
);

const add = defineScript({
  name: "test.add",
  write: true,
  keys: ["total", "...extra"],
  args: ["label", "...values", "...more"],
  uses: [SUM],
  refusals: { too_big: (r, call) => new TestRefusal("too_big", `${call.args.label}: ${String(r.limit)}`) },
  lua: `
local by = sum(values) + sum(more)
if by > 100 then return {refused = 'too_big', limit = 100} end
redis.call('INCRBY', total, by)
for _, k in ipairs(extra) do redis.call('SET', k, label) end
return {label = label, by = by, extra = #extra}
`,
});

const get = defineScript({
  name: "test.get",
  write: false,
  keys: ["total"],
  args: [],
  lua: "return redis.call('GET', total)",
});

describe("defineScript", () => {
  it("generates a header that binds names, lists and counts", () => {
    expect(add.text).toContain(`local total  = KEYS[2]`);
    expect(add.text).toContain(`local label  = ARGV[3]`);
    expect(add.declared).toEqual(["total", "extra", "label", "values", "more"]);
  });

  it("runs with named keys and lists, and replays with the same idempotency key", async () => {
    const keys = { total: `${prefix}:t`, extra: [`${prefix}:a`, `${prefix}:b`] };
    const first = await add.run(redis, keys, { label: "x", values: [1, 2, 3], more: [10] });
    expect(first).toEqual({ value: { label: "x", by: 16, extra: 2 }, replayed: false });
    expect(await command(target, "GET", `${prefix}:b`)).toBe("x");
    const idem = { key: `${prefix}:idem`, fingerprint: "f".repeat(64) };
    await add.run(redis, { total: keys.total, extra: [] }, { label: "y", values: [], more: [4] }, idem);
    const again = await add.run(redis, { total: keys.total, extra: [] }, { label: "y", values: [], more: [4] }, idem);
    expect(again).toEqual({ value: { label: "y", by: 4, extra: 0 }, replayed: true });
    expect(await get.run(redis, { total: keys.total }, {})).toBe("20");
  });

  it("maps a refusal to its typed error and keeps no record of it", async () => {
    const idem = { key: `${prefix}:idem2`, fingerprint: "e".repeat(64) };
    const call = () =>
      add.run(redis, { total: `${prefix}:t2`, extra: [] }, { label: "big", values: [99, 2], more: [] }, idem);
    await expect(call()).rejects.toThrow(new TestRefusal("too_big", "big: 100"));
    expect(await command(target, "EXISTS", idem.key)).toBe(0);
    expect(await command(target, "EXISTS", `${prefix}:t2`)).toBe(0);
  });

  it("refuses a name outside <feature>.<op> and a missing value", async () => {
    expect(() =>
      defineScript({ name: "test-bad" as `${string}.${string}`, write: false, keys: [], args: [], lua: "return 1" }),
    ).toThrow(/feature/);
    // @ts-expect-error -- a declared argument left out
    await expect(get.run(redis, {}, {})).rejects.toThrow(/no value for 'total'/);
  });
});

// A read that leaves its answer in a key of the request's own for a command after it
// (histograms.read); `tag` makes its text new, so its first call answers NOSCRIPT.
const stashOf = (tag: string) =>
  defineScript({
    name: "test.stash",
    write: false,
    keys: ["scratch"],
    args: ["label"],
    refusals: { declined: (_r, call) => new TestRefusal("declined", `${call.args.label}: declined`) },
    lua: `
-- ${tag}
if label == 'no' then return {refused = 'declined'} end
redis.call('ZADD', scratch, 2, 'b', 1, 'a', 1.5, 'c')
return {label = label}
`,
  });
const stash = stashOf(prefix);

describe("runPiped", () => {
  const popped = (scratch: string) => (pipeline: Parameters<Parameters<typeof stash.runPiped>[3]>[0]) =>
    pipeline.zpopmin(scratch, 10);

  it("sends the commands after the script in the same request, also when the script is new (NOSCRIPT)", async () => {
    // base64 replies (the SDK's default) and plain JSON (createRedis)
    for (const [i, client] of [redis, createRedis({ url: target.url, token: target.token })].entries()) {
      // a script text Redis has not seen: the first call answers NOSCRIPT and goes again with EVAL
      const fresh = stashOf(`${prefix}:${i}`);
      for (const label of ["first", "again"]) {
        const scratch = `${prefix}:stash:${label}`;
        const both = await fresh.runPiped(client, { scratch }, { label }, popped(scratch));
        expect(both).toEqual({ value: { label }, after: [["a", "1", "c", "1.5", "b", "2"]] });
        expect(await command(target, "EXISTS", scratch)).toBe(0);
      }
    }
  });

  it("throws a refusal as run does, after the commands ran; a client without a pipeline gets undefined", async () => {
    const scratch = `${prefix}:stash:no`;
    await expect(stash.runPiped(redis, { scratch }, { label: "no" }, popped(scratch))).rejects.toThrow(
      new TestRefusal("declined", "no: declined"),
    );
    const bare = { evalsha: redis.evalsha.bind(redis), eval: redis.eval.bind(redis), ping: redis.ping.bind(redis) };
    expect(canPipeline(bare)).toBe(false);
    expect(await stash.runPiped(bare, { scratch }, { label: "x" }, popped(scratch))).toBeUndefined();
    expect(await command(target, "EXISTS", scratch)).toBe(0);
  });
});
