/**
 * Fidelity of the local Upstash server: Upstash's own client, unmodified,
 * against it — base64 responses, pipelines, transactions, scripts with the
 * NOSCRIPT fallback, auth, refusals, and the per-tag counters tests rely on.
 */
import { Redis } from "@upstash/redis";
import { afterAll, describe, expect, it } from "vitest";
import { createRedis } from "../../src/redis/client.ts";
import { defineReadScript, defineWriteScript, runRead, runWrite, scriptSha } from "../../src/redis/script.ts";
import { command, deleteUnder, requireTarget, resetStats, statsOf, uniquePrefix } from "../helpers/upstash-rest.ts";

const target = requireTarget(process.env.EDGESTATS_UPSTASH_URL, process.env.EDGESTATS_UPSTASH_TOKEN);
const prefix = uniquePrefix("upstash");
const tag = prefix.replace(/\./g, "_");
const key = (name: string) => `${prefix}:${name}`;
afterAll(() => deleteUnder(target, prefix));

/** The client with Upstash's defaults (base64 responses, auto-pipelining, deserialization). */
const stock = new Redis({ url: target.url, token: `${target.token}.${tag}`, enableTelemetry: false });
/** The client as the service configures it. */
const ours = createRedis({ url: target.url, token: `${target.token}.${tag}` });

async function raw(path: string, body: unknown, token = target.token, headers: Record<string, string> = {}) {
  const res = await fetch(`${target.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any, sync: res.headers.get("upstash-sync-token") };
}

describe("the Upstash REST protocol", () => {
  it("serves strings and hashes to the stock client (base64 decoding, unicode, binary-looking values)", async () => {
    await stock.set(key("s"), "héllo wörld ✓");
    expect(await stock.get(key("s"))).toBe("héllo wörld ✓");
    expect(await stock.incrby(key("n"), 42)).toBe(42);
    expect(await stock.get(key("n"))).toBe(42); // automatic deserialization, as on Upstash
    await stock.hset(key("h"), { name: "Ada", level: "7" });
    expect(await stock.hgetall(key("h"))).toEqual({ name: "Ada", level: 7 });
    expect(await stock.ping()).toBe("PONG");
    expect(await stock.get(key("missing"))).toBeNull();
  });

  it("encodes every string at any depth with Upstash-Encoding: base64, and nothing without it", async () => {
    await raw("/", ["ZADD", key("enc"), "1", "a", "2", "ü"]);
    const encoded = await raw("/", ["ZRANGE", key("enc"), "0", "-1", "WITHSCORES"], target.token, { "upstash-encoding": "base64" });
    expect(encoded.body.result).toEqual(["YQ==", "MQ==", "w7w=", "Mg=="]);
    const plain = await raw("/", ["ZRANGE", key("enc"), "0", "-1", "WITHSCORES"]);
    expect(plain.body.result).toEqual(["a", "1", "ü", "2"]);
    const ok = await raw("/", ["SET", key("enc2"), "x"], target.token, { "upstash-encoding": "base64" });
    expect(ok.body.result).toBe("OK");
    const count = await raw("/", ["ZCARD", key("enc")], target.token, { "upstash-encoding": "base64" });
    expect(count.body.result).toBe(2);
    expect(encoded.sync).toMatch(/^[0-9a-f-]{36}$/);
    expect(plain.sync).not.toBe(encoded.sync);
  });

  it("serves sorted sets: ZADD options, ZINCRBY, ZUNIONSTORE and ZUNION with weights and aggregate", async () => {
    const a = key("za");
    const b = key("zb");
    expect(await stock.zadd(a, { score: 1, member: "x" }, { score: 5, member: "y" })).toBe(2);
    expect(await stock.zadd(a, { nx: true }, { score: 9, member: "x" })).toBe(0);
    expect(await stock.zadd(a, { xx: true, ch: true }, { score: 3, member: "x" })).toBe(1);
    expect(await stock.zadd(a, { gt: true }, { score: 2, member: "x" })).toBe(0);
    expect(await stock.zadd(a, { incr: true }, { score: 2, member: "y" })).toBe(7);
    expect(await stock.zincrby(b, 4, "x")).toBe(4);
    await stock.zadd(b, { score: 10, member: "z" });
    expect(await stock.zunionstore(key("zu"), 2, [a, b], { weights: [2, 1], aggregate: "sum" })).toBe(3);
    expect(await stock.zrange(key("zu"), 0, -1, { withScores: true })).toEqual(["x", 10, "z", 10, "y", 14]);
    expect(await stock.zunion(2, [a, b], { aggregate: "max", withScores: true })).toEqual(["x", 4, "y", 7, "z", 10]);
    expect(await stock.zrank(a, "y")).toBe(1);
    expect(await stock.zscore(a, "x")).toBe(3);
  });

  it("serves HyperLogLog", async () => {
    expect(await stock.pfadd(key("hll"), "a", "b", "c", "a")).toBe(1);
    expect(await stock.pfcount(key("hll"))).toBe(3);
  });

  it("runs pipelines and auto-pipelined calls, with per-command errors", async () => {
    const p = stock.pipeline();
    p.set(key("p1"), "1");
    p.incr(key("p1"));
    p.hset(key("p1"), { a: 1 }); // WRONGTYPE: reported for this command only
    p.get(key("p1"));
    await expect(p.exec()).rejects.toThrow(/WRONGTYPE/);
    const res = await raw("/pipeline", [["SET", key("p2"), "1"], ["HSET", key("p2"), "a", "1"], ["INCR", key("p2")]]);
    expect(res.status).toBe(200);
    expect(res.body[0]).toEqual({ result: "OK" });
    expect(res.body[1].error).toMatch(/^WRONGTYPE/);
    expect(res.body[2]).toEqual({ result: 2 });

    const auto = new Redis({ url: target.url, token: target.token, enableAutoPipelining: true, enableTelemetry: false });
    const [x, y, z] = await Promise.all([auto.incr(key("auto")), auto.incr(key("auto")), auto.get(key("auto"))]);
    expect([x, y, z]).toEqual([1, 2, 2]);
  });

  it("runs transactions atomically and answers a discarded one with a non-2xx error", async () => {
    const tx = stock.multi();
    tx.set(key("t"), "1");
    tx.incrby(key("t"), 9);
    tx.get(key("t"));
    expect(await tx.exec()).toEqual(["OK", 10, 10]);
    const discarded = await raw("/multi-exec", [["SET", key("t2"), "1"], ["INCRBY", key("t2")]]);
    expect(discarded.status).toBe(400);
    expect(discarded.body.error).toMatch(/wrong number of arguments.*discarded/);
    expect(await command(target, "EXISTS", key("t2"))).toBe(0); // nothing of it ran
  });

  it("refuses the commands Upstash does not serve, also inside pipelines and transactions", async () => {
    await stock.rpush(key("list"), 3, 1, 2);
    const sort = await raw("/", ["SORT", key("list")]);
    expect(sort.status).toBe(400);
    expect(sort.body.error).toMatch(/Command is not available: 'sort'/);
    for (const cmd of [["WATCH", key("list")], ["BLPOP", key("list"), "1"], ["TOPK.ADD", key("tk"), "a"], ["MULTI"]]) {
      expect((await raw("/", cmd)).body.error).toMatch(/not available/);
    }
    const pipe = await raw("/pipeline", [["SORT", key("list")], ["LLEN", key("list")]]);
    expect(pipe.body[0].error).toMatch(/not available/);
    expect(pipe.body[1]).toEqual({ result: 3 });
    const tx = await raw("/multi-exec", [["LLEN", key("list")], ["SORT", key("list")]]);
    expect(tx.status).toBe(400);
  });

  it("requires the token", async () => {
    expect((await raw("/", ["PING"], "wrong")).status).toBe(401);
    const res = await fetch(target.url, { method: "POST", body: JSON.stringify(["PING"]) });
    expect(res.status).toBe(401);
    const client = new Redis({ url: target.url, token: "wrong", retry: false, enableTelemetry: false });
    await expect(client.ping()).rejects.toThrow(/WRONGPASS/);
  });

  it("answers the path form of a command", async () => {
    const res = await fetch(`${target.url}/set/${encodeURIComponent(key("path"))}/v1`, { headers: { authorization: `Bearer ${target.token}` } });
    expect(await res.json()).toEqual({ result: "OK" });
    expect(await command(target, "GET", key("path"))).toBe("v1");
  });
});

describe("scripts", () => {
  const read = defineReadScript(
    "test-read",
    `
local value = redis.call('GET', KEYS[1])
return cjson.encode({ value = value or false, arg = ARGV[1] })
`,
  );
  const write = defineWriteScript(
    "test-write",
    `
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], 60)
return { total = total }
`,
  );

  it("keeps the client's SHA-1 valid although the flag Redis 7.0 refuses is stripped", async () => {
    const loaded = await command<string>(target, "SCRIPT", "LOAD", read.text);
    expect(loaded).toBe(await scriptSha(read));
    expect(await command(target, "SCRIPT", "EXISTS", loaded)).toEqual([1]);
  });

  it("falls back from EVALSHA to EVAL on NOSCRIPT, then costs one round trip", async () => {
    await command(target, "SCRIPT", "FLUSH");
    await resetStats(target, tag);
    await command(target, "SET", key("sv"), "hello");
    await resetStats(target, tag);
    expect(await runRead(ours, read, [key("sv")], ["x"])).toEqual({ value: "hello", arg: "x" });
    expect((await statsOf(target, tag)).requests).toBe(2); // EVALSHA → NOSCRIPT, EVAL
    await resetStats(target, tag);
    expect(await runRead(ours, read, [key("sv")], ["y"])).toEqual({ value: "hello", arg: "y" });
    const after = await statsOf(target, tag);
    expect(after.requests).toBe(1);
    expect(after.byCommand).toEqual({ evalsha: 1, get: 1 });
    expect(after.commands).toBe(2);
  });

  it("counts the commands a script runs, the idempotency prelude's included", async () => {
    await runWrite(ours, write, [key("w")], [5]);
    await resetStats(target, tag);
    const first = await runWrite<{ total: number }>(ours, write, [key("w")], [5], { key: key("idem"), fingerprint: "f1" });
    expect(first).toEqual({ value: { total: 10 }, replayed: false });
    const s = await statsOf(target, tag);
    expect(s.requests).toBe(1);
    expect(s.byCommand).toEqual({ evalsha: 1, get: 1, incrby: 1, expire: 1, set: 1 });
    const again = await runWrite<{ total: number }>(ours, write, [key("w")], [5], { key: key("idem"), fingerprint: "f1" });
    expect(again).toEqual({ value: { total: 10 }, replayed: true });
    await expect(runWrite(ours, write, [key("w")], [5], { key: key("idem"), fingerprint: "other" })).rejects.toThrow(/already used/);
  });

  it("fails a script that touches a key it did not declare, as Upstash's key locking requires", async () => {
    const sneaky = defineReadScript("test-sneaky", `return cjson.encode(redis.call('GET', KEYS[1] .. ':other'))`);
    await expect(runRead(ours, sneaky, [key("x")])).rejects.toThrow(/not in KEYS/);
    const multi = defineReadScript("test-multi", `return cjson.encode(redis.call('ZUNION', 2, KEYS[1], KEYS[2]))`);
    expect(await runRead(ours, multi, [key("m1"), key("m2")])).toEqual({});
    const undeclared = defineReadScript("test-multi2", `return cjson.encode(redis.call('ZUNION', 2, KEYS[1], 'elsewhere'))`);
    await expect(runRead(ours, undeclared, [key("m1")])).rejects.toThrow(/not in KEYS/);
    const sorts = defineReadScript("test-sort", `return cjson.encode(redis.call('SORT', KEYS[1]))`);
    await expect(runRead(ours, sorts, [key("list")])).rejects.toThrow(/not available/);
  });
});
