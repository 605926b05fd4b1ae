/**
 * The library's own Upstash client (`createRedis`, src/redis/http.ts) against `@upstash/redis` 1.39
 * with the settings it replaces: the same calls through a recording HTTP proxy in front of the
 * local Upstash server must send the same requests (path, body, the headers Upstash reads, the
 * sync token carried from the last reply) and give the same replies and errors (class name and
 * message, which src/redis/run.ts reads), one HTTP request per call.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedis, type RedisClient, type RedisPipeline } from "../../src/redis/client.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const { target, prefix } = libraryTest("httpclient");
const key = (name: string) => `${prefix}:${name}`;

interface Seen {
  path: string;
  headers: Record<string, string | undefined>;
  body: unknown;
}

let seen: Seen[] = [];
/** The sync token of each reply the proxy passed on since `seen` was last emptied, in order. */
let replied: string[] = [];
let proxy: Server;
let proxyUrl: string;

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

beforeAll(async () => {
  proxy = createServer((req, res) => {
    void (async () => {
      const body = await bodyOf(req);
      const header = (name: string) => {
        const value = req.headers[name];
        return value === undefined ? undefined : [value].flat().join(",");
      };
      const sync = header("upstash-sync-token");
      seen.push({
        path: req.url ?? "",
        headers: {
          method: req.method,
          "content-type": header("content-type"),
          authorization: req.headers.authorization,
          // which reply's token the request carries (a client keeps the last successful reply's)
          "upstash-sync-token": sync && replied.includes(sync) ? `<reply ${replied.indexOf(sync) + 1}'s>` : sync,
          "upstash-encoding": header("upstash-encoding"),
          telemetry: Object.keys(req.headers)
            .filter((h) => h.startsWith("upstash-telemetry"))
            .join(","),
        },
        body: JSON.parse(body),
      });
      const upstream = await fetch(`${target.url}${req.url}`, {
        method: "POST",
        headers: { authorization: req.headers.authorization ?? "", "content-type": "application/json" },
        body,
      });
      const token = upstream.headers.get("upstash-sync-token") ?? "";
      replied.push(token);
      res.writeHead(upstream.status, { "content-type": "application/json", "upstash-sync-token": token });
      res.end(await upstream.text());
    })();
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
});

/** @upstash/redis as createRedis configured it before src/redis/http.ts. */
function upstashClient(token = target.token): RedisClient {
  return new Redis({
    url: proxyUrl,
    token,
    retry: { retries: 0 },
    automaticDeserialization: false,
    enableAutoPipelining: false,
    enableTelemetry: false,
    responseEncoding: false,
    signal: () => AbortSignal.timeout(3000),
  });
}

function ourClient(token = target.token): RedisClient {
  return createRedis({ url: proxyUrl, token });
}

/** A call's outcome: its reply, or its error's class name and message. */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { reply: await call() };
  } catch (error) {
    const e = error as Error;
    return { error: e.name, message: e.message };
  }
}

const SCRIPT = "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) return cjson.encode({KEYS[1], ARGV[2], '123'})";
const FAILING = "return redis.call('INCR', KEYS[1])"; // on a sorted set: WRONGTYPE

/** Every kind of call the library sends, each against fresh keys; the outcomes in order. */
async function session(redis: RedisClient): Promise<unknown[]> {
  await command(target, "DEL", key("z"), key("n"), key("scratch"));
  await command(target, "SCRIPT", "FLUSH");
  const sha = (await command<string>(target, "SCRIPT", "LOAD", SCRIPT)) as string;
  await command(target, "SCRIPT", "FLUSH");
  const pipe = () => (redis.pipeline as () => RedisPipeline)();
  const out: unknown[] = [];
  out.push(await outcome(() => redis.ping()));
  out.push(await outcome(() => redis.evalsha(sha, [key("z")], ["2", "b"]))); // NOSCRIPT
  out.push(await outcome(() => redis.eval(SCRIPT, [key("z")], ["2", "b"])));
  out.push(await outcome(() => redis.evalsha(sha, [key("z")], ["1", "a"])));
  out.push(await outcome(() => redis.eval(FAILING, [key("z")], [])));
  await command(target, "ZADD", key("scratch"), 3, "é", 1, "x");
  out.push(
    await outcome(() =>
      pipe()
        .evalsha(sha, [key("z")], ["4", "d"])
        .zpopmin(key("scratch"), 20401)
        .incrby(key("n"), 5)
        .eval(FAILING, [key("z")], [])
        .scriptLoad(FAILING)
        .exists(key("scratch"), key("n"))
        .ping()
        .exec({ keepErrors: true }),
    ),
  );
  out.push(
    await outcome(() =>
      pipe()
        .eval(SCRIPT, [key("z")], ["5", "e"])
        .incrby(key("n"), 2)
        .exec(),
    ),
  );
  out.push(
    await outcome(() =>
      pipe()
        .incrby(key("n"), 1)
        .eval(FAILING, [key("z")], [])
        .exec(),
    ),
  );
  out.push(await outcome(() => pipe().exec()));
  return out;
}

describe("createRedis's client", () => {
  it("sends the requests @upstash/redis sends with createRedis's settings, and answers the same", async () => {
    [seen, replied] = [[], []];
    const theirs = await session(upstashClient());
    const theirRequests = seen;
    [seen, replied] = [[], []];
    const ours = await session(ourClient());
    const ourRequests = seen;
    expect(ours).toEqual(theirs);
    expect(ourRequests).toEqual(theirRequests);
    // what the comparison covers, so that two silent clients cannot pass it
    expect(theirRequests).toHaveLength(8);
    expect(theirRequests[0]).toEqual({
      path: "/",
      headers: {
        method: "POST",
        "content-type": "application/json",
        authorization: `Bearer ${target.token}`,
        "upstash-sync-token": "",
        "upstash-encoding": undefined,
        telemetry: "",
      },
      body: ["ping"],
    });
    expect(theirRequests.map((r) => r.headers["upstash-sync-token"])).toEqual([
      "",
      "<reply 1's>",
      "<reply 1's>", // the NOSCRIPT answer (a 400) leaves the token as it was
      "<reply 3's>",
      "<reply 4's>",
      "<reply 4's>", // and so does WRONGTYPE's
      "<reply 6's>",
      "<reply 7's>", // a pipeline's reply is a 200 even when a command in it failed
    ]);
    expect(theirs[1]).toMatchObject({ error: "UpstashError", message: expect.stringMatching(/^NOSCRIPT/) });
    expect(theirs[4]).toMatchObject({ error: "UpstashError", message: expect.stringMatching(/^WRONGTYPE/) });
    expect(theirs[7]).toMatchObject({ error: "UpstashError", message: expect.stringMatching(/^Command 2 \[ eval \]/) });
    expect(theirs[8]).toEqual({ error: "Error", message: "Pipeline is empty" });
  });

  it("answers a refused token and an unreachable server as @upstash/redis does", async () => {
    [seen, replied] = [[], []];
    const theirs = [
      await outcome(() => upstashClient("wrong-token").ping()),
      await outcome(() => upstashClient("wrong-token").eval("return 1", [], [])),
    ];
    const theirRequests = seen;
    [seen, replied] = [[], []];
    const ours = [
      await outcome(() => ourClient("wrong-token").ping()),
      await outcome(() => ourClient("wrong-token").eval("return 1", [], [])),
    ];
    expect(ours).toEqual(theirs);
    expect(seen).toEqual(theirRequests);
    expect(theirs[0]).toMatchObject({
      error: "UpstashError",
      message: expect.stringContaining('command was: ["ping"]'),
    });
    const closed = "http://127.0.0.1:9"; // discard port: nothing listens
    const stock = new Redis({ url: closed, token: "t", retry: { retries: 0 }, enableTelemetry: false });
    const a = (await outcome(() => stock.ping())) as { error: string };
    const b = (await outcome(() => createRedis({ url: closed, token: "t" }).ping())) as { error: string };
    expect(b.error).toBe(a.error);
  });
});
