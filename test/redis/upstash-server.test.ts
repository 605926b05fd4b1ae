/**
 * Fidelity of the local Upstash server: Upstash's own client, unmodified,
 * against it — base64 responses, pipelines, transactions, scripts with the
 * NOSCRIPT fallback, auth, refusals, and the per-tag counters tests rely on;
 * malformed and large requests, the key guard, the RESP parser on split
 * chunks, and a redis-server that is killed and comes back.
 */
import { Redis } from "@upstash/redis";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, startRedis, type RedisServer } from "../../dev/redis.ts";
import { ReplyError, RespParser, type Reply } from "../../dev/resp.ts";
import { startUpstashServer, type UpstashServer } from "../../dev/upstash-server.ts";
import { createRedis } from "../../src/redis/client.ts";
import { defineScript, scriptSha } from "../../src/redis/script.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const { target, prefix } = libraryTest("upstash");
const tag = prefix.replace(/\./g, "_");
const key = (name: string) => `${prefix}:${name}`;

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
    const encoded = await raw("/", ["ZRANGE", key("enc"), "0", "-1", "WITHSCORES"], target.token, {
      "upstash-encoding": "base64",
    });
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
    const res = await raw("/pipeline", [
      ["SET", key("p2"), "1"],
      ["HSET", key("p2"), "a", "1"],
      ["INCR", key("p2")],
    ]);
    expect(res.status).toBe(200);
    expect(res.body[0]).toEqual({ result: "OK" });
    expect(res.body[1].error).toMatch(/^WRONGTYPE/);
    expect(res.body[2]).toEqual({ result: 2 });

    const auto = new Redis({
      url: target.url,
      token: target.token,
      enableAutoPipelining: true,
      enableTelemetry: false,
    });
    const [x, y, z] = await Promise.all([auto.incr(key("auto")), auto.incr(key("auto")), auto.get(key("auto"))]);
    expect([x, y, z]).toEqual([1, 2, 2]);
  });

  it("runs transactions atomically and answers a discarded one with a non-2xx error", async () => {
    const tx = stock.multi();
    tx.set(key("t"), "1");
    tx.incrby(key("t"), 9);
    tx.get(key("t"));
    expect(await tx.exec()).toEqual(["OK", 10, 10]);
    const discarded = await raw("/multi-exec", [
      ["SET", key("t2"), "1"],
      ["INCRBY", key("t2")],
    ]);
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
    const pipe = await raw("/pipeline", [
      ["SORT", key("list")],
      ["LLEN", key("list")],
    ]);
    expect(pipe.body[0].error).toMatch(/not available/);
    expect(pipe.body[1]).toEqual({ result: 3 });
    const tx = await raw("/multi-exec", [
      ["LLEN", key("list")],
      ["SORT", key("list")],
    ]);
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
    const res = await fetch(`${target.url}/set/${encodeURIComponent(key("path"))}/v1`, {
      headers: { authorization: `Bearer ${target.token}` },
    });
    expect(await res.json()).toEqual({ result: "OK" });
    expect(await command(target, "GET", key("path"))).toBe("v1");
  });
});

describe("scripts", () => {
  const read = defineScript({
    name: "test.read",
    write: false,
    keys: ["key"],
    args: ["arg"],
    lua: `
local value = redis.call('GET', key)
return { value = value or false, arg = arg }
`,
  });
  const write = defineScript({
    name: "test.write",
    write: true,
    keys: ["counter"],
    args: ["by"],
    lua: `
local total = redis.call('INCRBY', counter, by)
redis.call('EXPIRE', counter, 60)
return { total = total }
`,
  });

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
    expect(await read.run(ours, { key: key("sv") }, { arg: "x" })).toEqual({ value: "hello", arg: "x" });
    expect((await statsOf(target, tag)).requests).toBe(2); // EVALSHA → NOSCRIPT, EVAL
    await resetStats(target, tag);
    expect(await read.run(ours, { key: key("sv") }, { arg: "y" })).toEqual({ value: "hello", arg: "y" });
    const after = await statsOf(target, tag);
    expect(after.requests).toBe(1);
    expect(after.byCommand).toEqual({ evalsha: 1, get: 1 });
    expect(after.commands).toBe(2);
  });

  it("counts the commands a script runs, the idempotency prelude's included", async () => {
    await write.run(ours, { counter: key("w") }, { by: 5 });
    await resetStats(target, tag);
    const first = await write.run<{ total: number }>(
      ours,
      { counter: key("w") },
      { by: 5 },
      { key: key("idem"), fingerprint: "f1" },
    );
    expect(first).toEqual({ value: { total: 10 }, replayed: false });
    const s = await statsOf(target, tag);
    expect(s.requests).toBe(1);
    expect(s.byCommand).toEqual({ evalsha: 1, get: 1, incrby: 1, expire: 1, set: 1 });
    const again = await write.run<{ total: number }>(
      ours,
      { counter: key("w") },
      { by: 5 },
      { key: key("idem"), fingerprint: "f1" },
    );
    expect(again).toEqual({ value: { total: 10 }, replayed: true });
    await expect(
      write.run(ours, { counter: key("w") }, { by: 5 }, { key: key("idem"), fingerprint: "other" }),
    ).rejects.toThrow(/already used/);
  });

  it("fails a script that touches a key it did not declare, as Upstash's key locking requires", async () => {
    const one = (name: `test.${string}`, lua: string) =>
      defineScript({ name, write: false, keys: ["key"], args: [], lua });
    const sneaky = one("test.sneaky", `return redis.call('GET', key .. ':other')`);
    await expect(sneaky.run(ours, { key: key("x") }, {})).rejects.toThrow(/not in KEYS/);
    const multi = defineScript({
      name: "test.multi",
      write: false,
      keys: ["a", "b"],
      args: [],
      lua: `return redis.call('ZUNION', 2, a, b)`,
    });
    expect(await multi.run(ours, { a: key("m1"), b: key("m2") }, {})).toEqual({});
    const undeclared = one("test.multiUndeclared", `return redis.call('ZUNION', 2, key, 'elsewhere')`);
    await expect(undeclared.run(ours, { key: key("m1") }, {})).rejects.toThrow(/not in KEYS/);
    const sorts = one("test.sort", `return redis.call('SORT', key)`);
    await expect(sorts.run(ours, { key: key("list") }, {})).rejects.toThrow(/not available/);
  });
});

describe("protocol edge cases", () => {
  async function post(path: string, body: string | undefined, headers: Record<string, string> = {}) {
    const res = await fetch(`${target.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${target.token}`, ...headers },
      ...(body === undefined ? {} : { body }),
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  it("answers a malformed request with 400 and an {error}, never a 5xx", async () => {
    const bad: [string, string | undefined][] = [
      ["/", undefined], // empty body
      ["/", "{not json"],
      ["/", JSON.stringify({ command: "PING" })], // not an array
      ["/", "[]"],
      ["/", JSON.stringify(["SET", key("nested"), ["a", "b"]])], // nested array
      ["/", JSON.stringify(["SET", key("obj"), { a: 1 }])],
      ["/", JSON.stringify(["SET", key("null"), null])],
      ["/pipeline", "[]"],
      ["/pipeline", "[[]]"],
      ["/pipeline", JSON.stringify(["PING"])], // commands must be arrays
      ["/multi-exec", JSON.stringify({})],
      ["/get/%E0%A4%A", undefined], // broken percent-encoding in the path form
    ];
    for (const [path, body] of bad) {
      const res = await post(path, body);
      expect({ path, body, status: res.status }).toEqual({ path, body, status: 400 });
      expect(typeof res.body.error).toBe("string");
    }
    expect(await command(target, "EXISTS", key("nested"), key("obj"), key("null"))).toBe(0);
  });

  it("takes numbers and booleans as arguments, as @upstash/redis sends them", async () => {
    expect((await post("/", JSON.stringify(["SET", key("num"), 12.5]))).body).toEqual({ result: "OK" });
    expect((await post("/", JSON.stringify(["INCRBYFLOAT", key("num"), 1]))).body).toEqual({ result: "13.5" });
    expect((await post("/", JSON.stringify(["SET", key("bool"), true]))).body).toEqual({ result: "OK" });
    expect(await command(target, "GET", key("bool"))).toBe("true");
    expect(await stock.set(key("flag"), false)).toBe("OK");
  });

  it("serves very large replies whole, plain and base64", async () => {
    const big = "x".repeat(3 * 1024 * 1024) + "é";
    expect((await post("/", JSON.stringify(["SET", key("big"), big]))).status).toBe(200);
    expect((await post("/", JSON.stringify(["GET", key("big")]))).body.result).toBe(big);
    const encoded = await post("/", JSON.stringify(["GET", key("big")]), { "upstash-encoding": "base64" });
    expect(Buffer.from(encoded.body.result, "base64").toString("utf8")).toBe(big);
    const members = Array.from({ length: 20_000 }, (_, i) => [String(i), `m${i}`]).flat();
    await post("/", JSON.stringify(["ZADD", key("bigz"), ...members]));
    const range = await post("/", JSON.stringify(["ZRANGE", key("bigz"), "0", "-1"]));
    expect(range.body.result).toHaveLength(20_000);
    expect(range.body.result[19_999]).toBe("m19999");
  });

  it("returns binary values byte for byte with Upstash-Encoding: base64", async () => {
    const bytes = [0, 255, 254, 128, 10, 13, 0];
    const lua = `return redis.call('SET', KEYS[1], string.char(${bytes.join(",")}))`;
    expect((await post("/", JSON.stringify(["EVAL", lua, "1", key("bin")]))).body).toEqual({ result: "OK" });
    const res = await post("/", JSON.stringify(["GET", key("bin")]), { "upstash-encoding": "base64" });
    expect([...Buffer.from(res.body.result, "base64")]).toEqual(bytes);
    const inScript = await post(
      "/",
      JSON.stringify(["EVAL", "return {redis.call('GET', KEYS[1]), 7, false}", "1", key("bin")]),
      {
        "upstash-encoding": "base64",
      },
    );
    expect(
      inScript.body.result.map((v: unknown) => (typeof v === "string" ? [...Buffer.from(v, "base64")] : v)),
    ).toEqual([bytes, 7, null]);
  });

  it("counts per tag exactly while requests of several tags run concurrently", async () => {
    const read = defineScript({
      name: "test.count",
      write: false,
      keys: ["key"],
      args: [],
      lua: `return redis.call('GET', key)`,
    });
    const a = createRedis({ url: target.url, token: `${target.token}.${tag}_a` });
    // plain commands (GET) are not the library's client's: @upstash/redis's, with createRedis's settings
    const b = new Redis({
      url: target.url,
      token: `${target.token}.${tag}_b`,
      retry: { retries: 0 },
      automaticDeserialization: false,
      enableAutoPipelining: false,
      enableTelemetry: false,
    });
    await read.run(a, { key: key("c") }, {}); // cached in Redis
    await Promise.all([resetStats(target, `${tag}_a`), resetStats(target, `${tag}_b`)]);
    await Promise.all([
      ...Array.from({ length: 30 }, () => read.run(a, { key: key("c") }, {})),
      ...Array.from({ length: 30 }, () => b.get(key("c"))),
      ...Array.from({ length: 10 }, () =>
        b
          .pipeline()
          .get(key("c"))
          .eval("return redis.call('GET', KEYS[1])", [key("c")], [])
          .exec(),
      ),
    ]);
    const sa = await statsOf(target, `${tag}_a`);
    expect(sa).toEqual({ requests: 30, commands: 60, byCommand: { evalsha: 30, get: 30 } });
    const sb = await statsOf(target, `${tag}_b`);
    expect(sb).toEqual({ requests: 40, commands: 60, byCommand: { get: 50, eval: 10 } });
  });
});

describe("the key guard injected into scripts", () => {
  it("checks every key of multi-key commands and only the keys (options and members are not keys)", async () => {
    const [src, dst, bits] = [key("g-src"), key("g-dst"), key("g-bits")];
    const script = defineScript({
      name: "test.guardMulti",
      write: false,
      keys: ["src", "dst", "s1", "s2", "l1", "l2", "copy", "bits"],
      args: [],
      lua: `
redis.call('ZADD', src, 1, 'a', 2, 'b')
redis.call('ZRANGESTORE', dst, src, 0, -1)
redis.call('SADD', s1, 'm')
redis.call('SMOVE', s1, s2, 'm')
redis.call('RPUSH', l1, 'x')
redis.call('LMOVE', l1, l2, 'LEFT', 'RIGHT')
redis.call('COPY', dst, copy, 'REPLACE')
redis.call('SET', bits, 'a')
redis.call('BITOP', 'OR', bits, bits)
redis.call('DEL', src, dst, s1, s2, l1, l2, copy, bits)
return 'ok'
`,
    });
    const keys = {
      src,
      dst,
      s1: key("g-s1"),
      s2: key("g-s2"),
      l1: key("g-l1"),
      l2: key("g-l2"),
      copy: key("g-copy"),
      bits,
    };
    expect(await script.run(ours, keys, {})).toBe("ok");
    const one = (name: `test.${string}`, lua: string) =>
      defineScript({ name, write: false, keys: ["key"], args: [], lua });
    const undeclaredDestination = one("test.guardDst", `return redis.call('ZRANGESTORE', 'elsewhere', key, 0, -1)`);
    await expect(undeclaredDestination.run(ours, { key: src }, {})).rejects.toThrow(/elsewhere.*not in KEYS/);
    const undeclaredBitop = one("test.guardBitop", `return redis.call('BITOP', 'AND', key, 'elsewhere')`);
    await expect(undeclaredBitop.run(ours, { key: bits }, {})).rejects.toThrow(/elsewhere.*not in KEYS/);
  });

  it("cannot be bypassed by calling redis.call through a local alias or with spaces", async () => {
    // the key is declared (and unused), as before: only 'elsewhere' is out of KEYS
    const one = (name: `test.${string}`, lua: string) =>
      defineScript({ name, write: false, keys: ["key"], args: [], lua });
    const aliased = one("test.guardAlias", `local call = redis.call\nreturn call('GET', 'elsewhere')`);
    await expect(aliased.run(ours, { key: key("x") }, {})).rejects.toThrow(/not in KEYS/);
    const spaced = one("test.guardSpace", `return redis.pcall ('GET', 'elsewhere')`);
    await expect(spaced.run(ours, { key: key("x") }, {})).rejects.toThrow(/not in KEYS/);
  });
});

describe("the RESP parser", () => {
  const encode = (text: string) => Buffer.from(text, "latin1");
  // A nested array (with nil, an empty array and an error inside), then a bulk string that is itself CR LF CR.
  const wire = "*4\r\n$5\r\nhello\r\n:42\r\n*3\r\n+OK\r\n$-1\r\n*0\r\n-ERR bad thing\r\n$3\r\n\r\n\r\r\n";

  function parseAll(chunks: Buffer[]): Reply[] {
    const parser = new RespParser();
    const out: Reply[] = [];
    for (const chunk of chunks) parser.feed(chunk, (r) => out.push(r));
    return out;
  }

  it("gives the same replies however the bytes are split, one byte at a time included", () => {
    const whole = parseAll([encode(wire)]);
    expect(whole).toHaveLength(2);
    expect(whole[0]).toEqual([Buffer.from("hello"), 42, ["OK", null, []], new ReplyError("ERR bad thing")]);
    expect(whole[1]).toEqual(Buffer.from("\r\n\r"));
    const bytes = encode(wire);
    expect(parseAll([...bytes].map((b) => Buffer.from([b])))).toEqual(whole);
    for (let cut = 1; cut < bytes.length; cut++)
      expect(parseAll([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual(whole);
  });

  it("reads a bulk string of many MB sent in small chunks, with binary bytes intact", () => {
    const value = Buffer.alloc(8 * 1024 * 1024, 7);
    value[0] = 0;
    value[value.length - 1] = 255;
    const bytes = Buffer.concat([encode(`*2\r\n$${value.length}\r\n`), value, encode("\r\n:1\r\n")]);
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += 16 * 1024) chunks.push(bytes.subarray(at, at + 16 * 1024));
    const [reply] = parseAll(chunks) as [[Buffer, number]];
    expect(reply[1]).toBe(1);
    expect(reply[0].equals(value)).toBe(true);
  });
});

describe("a redis-server that goes away", () => {
  let redis: RedisServer | undefined;
  let server: UpstashServer | undefined;
  let port: number;
  afterAll(async () => {
    await server?.close();
    await redis?.stop();
  });

  it("answers 503 while Redis is down and recovers by itself when it is back", async () => {
    port = await freePort();
    redis = await startRedis({ port });
    server = await startUpstashServer({ redisUrl: redis.url, token: "gone" });
    const ping = async () => {
      const res = await fetch(server?.url ?? "", {
        method: "POST",
        headers: { authorization: "Bearer gone" },
        body: '["PING"]',
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    // Every pooled connection is open before Redis goes.
    for (let i = 0; i < 8; i++) expect(await ping()).toEqual({ status: 200, body: { result: "PONG" } });
    await redis.stop();
    for (let i = 0; i < 8; i++) {
      const down = await ping();
      expect(down.status).toBe(503);
      expect(down.body.error).toMatch(/unreachable/);
    }
    redis = await startRedis({ port });
    for (let i = 0; i < 8; i++) expect(await ping()).toEqual({ status: 200, body: { result: "PONG" } });
  });
});
