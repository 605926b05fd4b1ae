/**
 * The npm package as a user gets it: `npm run build:lib`, `npm pack`, the
 * tarball unpacked into a scratch `node_modules/edgestats`, and the three
 * examples (copied next to it, importing "edgestats") run against the local
 * Upstash server. Also: the packed API is the source's, and one library call
 * is one round trip, as for the service.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as source from "../../src/index.ts";
import * as clientSource from "../../src/client.ts";
import type * as nextRouteExample from "../../examples/next-route.ts";
import type * as nodeExample from "../../examples/node.ts";
import type * as workerExample from "../../examples/worker.ts";
import { libraryTest } from "../helpers/library.ts";
import { keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("pkg");
const { target } = lib;
const ROOT = resolve(import.meta.dirname, "../..");
const scratch = mkdtempSync(join(tmpdir(), "edgestats-pack-"));
/** A fresh prefix of its own (deleted after the file). */
const prefix = (label: string) => lib.ctx(0, label).prefix;

function run(args: string[]): string {
  // npm_execpath: the npm running `npm test`; plain `npm` when vitest was started otherwise.
  const npm = process.env.npm_execpath;
  const [cmd, argv] = npm && npm.endsWith(".js") ? [process.execPath, [npm, ...args]] : ["npm", args];
  const out = spawnSync(cmd, argv, {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, npm_config_loglevel: "error" },
  });
  if (out.status !== 0) throw new Error(`npm ${args.join(" ")} failed:\n${out.stderr}\n${out.stdout}`);
  return out.stdout;
}

let packed: { files: { path: string }[]; filename: string };
let pkg: typeof source;
const examples = join(scratch, "examples");

beforeAll(() => {
  run(["run", "build:lib"]);
  packed = (JSON.parse(run(["pack", "--json", "--pack-destination", scratch])) as (typeof packed)[])[0]!;
  const modules = join(scratch, "node_modules");
  mkdirSync(modules);
  const tar = spawnSync("tar", ["xzf", join(scratch, packed.filename), "-C", scratch], { encoding: "utf8" });
  if (tar.status !== 0) throw new Error(`tar: ${tar.stderr}`);
  cpSync(join(scratch, "package"), join(modules, "edgestats"), { recursive: true });
  // The package's one runtime dependency, as npm would install it.
  symlinkSync(join(ROOT, "node_modules/@upstash"), join(modules, "@upstash"));
  cpSync(join(ROOT, "examples"), examples, { recursive: true });
}, 120_000);

beforeAll(async () => {
  pkg = (await import(join(scratch, "node_modules/edgestats/dist/index.js"))) as typeof source;
});

afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
});

describe("the npm package", () => {
  it("npm pack ships only dist/, README.md and package.json, with .d.ts next to every module", () => {
    const files = packed.files.map((f) => f.path).sort();
    expect(files.filter((f) => !f.startsWith("dist/"))).toEqual(["README.md", "package.json"]);
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    for (const js of files.filter((f) => f.endsWith(".js"))) expect(files).toContain(js.replace(/\.js$/, ".d.ts"));
  });

  it("the built modules import .js files, never Hono, zod or Workers modules", () => {
    const dist = join(scratch, "node_modules/edgestats/dist");
    const sources = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".js"));
    for (const file of sources) {
      const text = readFileSync(join(dist, file), "utf8");
      const specifiers = [...text.matchAll(/^(?:import|export)[^;]*? from "([^"]+)";/gm)].map((m) => m[1]!);
      for (const s of specifiers)
        expect(s.startsWith(".") ? s.endsWith(".js") : s === "@upstash/redis", `${file}: ${s}`).toBe(true);
    }
  });

  it("the packed package exposes the same API as src/index.ts", () => {
    expect(Object.keys(pkg).sort()).toEqual(Object.keys(source).sort());
    const methods = (cls: { prototype: object }) => Object.getOwnPropertyNames(cls.prototype).sort();
    for (const name of [
      "Edgestats",
      "TrendingHandle",
      "CounterHandle",
      "HistogramHandle",
      "PresenceHandle",
      "LeaderboardHandle",
    ] as const) {
      expect(methods(pkg[name]), name).toEqual(methods(source[name]));
    }
    const stats = new pkg.Edgestats({ redis: new Redis({ url: target.url, token: target.token }) });
    expect(Object.keys(stats.jobs).sort()).toEqual(["compact", "leaderboardSnapshot", "sweepCounters", "trim"]);
    expect(stats.config).toMatchObject({
      keyPrefix: "es",
      trendingRetentionHours: 50,
      trendingKeep: 2400,
      presenceTimeoutSeconds: 300,
    });
    expect(new pkg.ValidationError("x")).toBeInstanceOf(pkg.EdgestatsError);
  });

  it("edgestats/client is packed too: the same exports, only its own and the errors modules at runtime", async () => {
    const manifest = JSON.parse(readFileSync(join(scratch, "node_modules/edgestats/package.json"), "utf8")) as {
      exports: Record<string, { default: string }>;
    };
    const packedClient = (await import(
      join(scratch, "node_modules/edgestats", manifest.exports["./client"]!.default)
    )) as typeof clientSource;
    expect(Object.keys(packedClient).sort()).toEqual(Object.keys(clientSource).sort());
    expect(packedClient.OPERATIONS).toEqual(clientSource.OPERATIONS);
    // at run time the client loads its calls, attempt and errors modules and the library's errors, nothing
    // else (./client-types.js is types only: nothing imports it at run time)
    const importsOf = (file: string) =>
      [
        ...readFileSync(join(scratch, "node_modules/edgestats/dist", file), "utf8").matchAll(
          /^import[^;]*? from "([^"]+)";/gm,
        ),
      ].map((m) => m[1]);
    // (./client-calls.js: the calls, one group per feature, split from client.js in review 21)
    expect(importsOf("client.js")).toEqual(["./client-calls.js", "./client-errors.js", "./client-http.js"]);
    expect(importsOf("client-calls.js")).toEqual([]);
    // (./names.js: the contract's name rule, which the client checks names in paths by since review 25)
    expect(importsOf("client-http.js")).toEqual(["./client-errors.js", "./names.js"]);
    expect(importsOf("names.js")).toEqual([]);
    expect(importsOf("client-errors.js")).toEqual(["./errors.js"]);
  });

  it("bad settings are a ConfigError, a bad name a ValidationError before any Redis call", async () => {
    const redis = new Redis({ url: "http://127.0.0.1:9", token: "unused" });
    expect(() => new pkg.Edgestats({ redis, prefix: "has:colon" })).toThrow(pkg.ConfigError);
    expect(() => new pkg.Edgestats({ redis, trending: { retentionHours: 1 } })).toThrow(pkg.ConfigError);
    const stats = new pkg.Edgestats({ redis });
    const error = await stats
      .counter("bad name")
      .incr("a")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(pkg.ValidationError);
    expect(error).toMatchObject({ code: "invalid_request" });
  });

  it("one library call is one round trip, with Redis.fromEnv()'s defaults (automatic deserialization)", async () => {
    const tag = `lib${Math.random().toString(36).slice(2, 8)}`;
    const stats = new pkg.Edgestats({
      redis: new Redis({ url: target.url, token: `${target.token}.${tag}` }),
      prefix: prefix("rt"),
    });
    const searches = stats.trending("searches");
    await searches.record("warm");
    await searches.top();
    await stats.counter("c").incr("123");
    await resetStats(target, tag);
    await searches.record([{ member: "a" }, { member: "b", count: 5 }]);
    await searches.top({ n: 5 });
    // the member "123" stays a string although the client parses JSON replies
    expect(await stats.counter("c").incr("123")).toEqual({ results: [{ member: "123", score: 2 }], replayed: false });
    expect((await statsOf(target, tag)).requests).toBe(3);
  });

  it("idempotencyKey makes a library write exactly-once; other arguments under the same key are a ConflictError", async () => {
    const stats = new pkg.Edgestats({
      redis: new Redis({ url: target.url, token: target.token }),
      prefix: prefix("idem"),
    });
    const board = stats.leaderboard("b");
    await board.join("p", { name: "P" });
    expect(await board.increment("p", 5, { idempotencyKey: "k-1" })).toMatchObject({ score: 5, replayed: false });
    expect(await board.increment("p", 5, { idempotencyKey: "k-1" })).toMatchObject({ score: 5, replayed: true });
    await expect(board.increment("p", 6, { idempotencyKey: "k-1" })).rejects.toBeInstanceOf(pkg.ConflictError);
    expect((await board.get("p")).score).toBe(5);
  });
});

describe("examples, importing the packed package", () => {
  it("examples/node.ts: every feature, with the service's key schema", async () => {
    const p = prefix("node");
    const { main } = (await import(join(examples, "node.ts"))) as typeof nodeExample;
    const result = await main(new Redis({ url: target.url, token: target.token }), p);
    expect(result).toEqual({
      trending: ["redis:3", "workers:2"],
      exact: true,
      pages: ["/home:3", "/docs:1"],
      boot: { count: 4, p50: expect.any(Number), max: 900 },
      online: 2,
      leaders: ["1. Grace 30", "2. Ada 10"],
    });
    const areas = new Set((await keysUnder(target, p)).map((k) => k.slice(p.length + 1).split(":")[0]));
    // the service's areas (README key schema), nothing else: a service on this prefix reads the same data
    expect([...areas].sort()).toEqual(["counters", "hist", "lb", "presence", "trending"]);
  });

  it("examples/worker.ts: fetch records and reads trending, maps errors to statuses; scheduled runs the jobs", async () => {
    const env = {
      UPSTASH_REDIS_REST_URL: target.url,
      UPSTASH_REDIS_REST_TOKEN: target.token,
      KEY_PREFIX: prefix("worker"),
    };
    const worker = ((await import(join(examples, "worker.ts"))) as typeof workerExample).default;
    const post = (q: string) =>
      worker.fetch(new Request(`http://w/search?q=${encodeURIComponent(q)}`, { method: "POST" }), env);
    for (const q of ["redis", "redis", "workers"]) expect((await post(q)).status).toBe(200);
    const top = await worker.fetch(new Request("http://w/trending?n=5"), env);
    expect(await top.json()).toEqual({
      items: [
        { rank: 1, member: "redis", count: 2 },
        { rank: 2, member: "workers", count: 1 },
      ],
      exact: true,
    });
    const bad = await post("");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("invalid_request");
    expect((await worker.fetch(new Request("http://w/trending?n=500"), env)).status).toBe(400);
    await worker.scheduled({ cron: "5 * * * *" }, env);
    await worker.scheduled({ cron: "* * * * *" }, env);
  });

  it("examples/next-route.ts: POST adds points once per Idempotency-Key, GET pages the board", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      UPSTASH_REDIS_REST_URL: target.url,
      UPSTASH_REDIS_REST_TOKEN: target.token,
      EDGESTATS_PREFIX: prefix("next"),
    });
    try {
      const route = (await import(join(examples, "next-route.ts"))) as typeof nextRouteExample;
      const post = (body: unknown, key?: string) =>
        route.POST(
          new Request("http://n/api/scores", {
            method: "POST",
            body: JSON.stringify(body),
            headers: key ? { "idempotency-key": key } : {},
          }),
        );
      expect(await (await post({ player: "ada", name: "Ada", points: 10 })).json()).toMatchObject({
        score: 10,
        rank: 1,
      });
      expect(await (await post({ player: "bob", points: 4 }, "req-1")).json()).toMatchObject({
        score: 4,
        rank: 2,
        replayed: false,
      });
      expect(await (await post({ player: "bob", points: 4 }, "req-1")).json()).toMatchObject({
        score: 4,
        replayed: true,
      });
      expect((await post({ player: "bad name", points: 1 })).status).toBe(400);
      expect((await post({ nope: true })).status).toBe(400);
      const page = (await (await route.GET(new Request("http://n/api/scores?page=1"))).json()) as {
        items: unknown[];
        total: number;
      };
      expect(page).toMatchObject({
        total: 2,
        items: [
          { rank: 1, player: "ada", name: "Ada", score: 10 },
          { rank: 2, player: "bob", name: "bob", score: 4 },
        ],
      });
    } finally {
      process.env = saved;
    }
  });
});
