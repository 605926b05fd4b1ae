/**
 * Review 2 (issue 14): the package's types as a consumer compiles them: the build (tsconfig.build.json)
 * into a scratch node_modules/edgestats, and `tsc` on a file that imports the public API only, with
 * tsc's default `skipLibCheck: false`. `it.fails` marks a confirmed bug (comment: wrong, right, severity).
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const tsc = join(root, "node_modules/typescript/bin/tsc");
const scratch = mkdtempSync(join(tmpdir(), "edgestats-review2-types-"));
const pkg = join(scratch, "node_modules/edgestats");

const CONSUMER = `
import { Redis } from "@upstash/redis";
import { Edgestats, ValidationError, createRedis, type EdgestatsOptions, type TopResult, type Written } from "edgestats";
import { createClient, EdgestatsError, type EdgestatsClient } from "edgestats/client";

const options: EdgestatsOptions = { redis: Redis.fromEnv(), prefix: "es", clock: () => 0 };
const stats = new Edgestats(options);
const own = new Edgestats({ redis: createRedis({ url: "http://127.0.0.1:1", token: "t" }) });
export async function main(): Promise<void> {
  const w: Written<{ accepted: number }> = await stats.trending("s").record("x", { idempotencyKey: "k" });
  const top: TopResult = await own.trending("s").top({ n: 5, window: "24h" });
  const api: EdgestatsClient = createClient({ baseUrl: "https://x", key: "k" });
  try {
    await api.counters.incr("c", { member: "m" });
  } catch (e) {
    if (e instanceof EdgestatsError) console.log(e.status, e.code, e.details?.[0]?.path);
    else if (e instanceof ValidationError) console.log(e.code);
  }
  console.log(w.replayed, top.items[0]?.member, (await stats.jobs.compact()).more);
}
`;

function compile(skipLibCheck: boolean, moduleResolution: "nodenext" | "bundler") {
  writeFileSync(
    join(scratch, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "ES2022",
        lib: ["ES2022"],
        types: ["node"],
        module: moduleResolution === "bundler" ? "esnext" : "nodenext",
        moduleResolution,
        skipLibCheck,
      },
      files: ["consumer.ts"],
    }),
  );
  const run = spawnSync(process.execPath, [tsc, "-p", scratch], { encoding: "utf8" });
  return { status: run.status, out: run.stdout + run.stderr };
}

beforeAll(() => {
  const build = spawnSync(
    process.execPath,
    [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", join(pkg, "dist")],
    {
      encoding: "utf8",
    },
  );
  expect(build.status, build.stdout + build.stderr).toBe(0);
  cpSync(join(root, "package.json"), join(pkg, "package.json"));
  for (const dep of ["@upstash/redis", "@types/node", "undici-types"]) {
    mkdirSync(join(scratch, "node_modules", dep, ".."), { recursive: true });
    symlinkSync(join(root, "node_modules", dep), join(scratch, "node_modules", dep));
  }
  writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "consumer", type: "module", private: true }));
  writeFileSync(join(scratch, "consumer.ts"), CONSUMER);
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("the public types, as a consumer compiles them", () => {
  it.each(["nodenext", "bundler"] as const)(
    "compile with skipLibCheck (%s), no DOM lib",
    (resolution) => {
      const { status, out } = compile(true, resolution);
      expect(out).toBe("");
      expect(status).toBe(0);
    },
    60_000,
  );

  // FIXED (was) (medium): tsconfig.build.json sets stripInternal, and `Runtime` (src/library/handles.ts) is marked
  // @internal, so dist/library/handles.d.ts keeps `constructor(runtime: Runtime, ...)` in every handle class
  // with `Runtime` stripped: "Cannot find name 'Runtime'" (TS2304) in any consumer with tsc's default
  // skipLibCheck: false (with skipLibCheck it silently becomes any). Right: the .d.ts files compile on their
  // own: drop @internal from Runtime (or mark the handle constructors @internal too).
  it("compile without skipLibCheck (tsc's default)", () => {
    const { status, out } = compile(false, "nodenext");
    expect(out).toBe("");
    expect(status).toBe(0);
  }, 60_000);
});
