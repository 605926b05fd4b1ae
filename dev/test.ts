/**
 * `npm test`: starts a throwaway redis-server and the local Upstash server,
 * runs every vitest project against them, and stops them. Extra arguments go
 * to vitest (`npm test -- test/worker/trending` runs one folder). Ends with a
 * plain `tests: N passed, N failed` line.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onExit } from "./on-exit.ts";
import { startStack } from "./stack.ts";

const stack = await startStack();
const env = {
  ...process.env,
  EDGESTATS_REDIS_URL: stack.redisUrl,
  EDGESTATS_UPSTASH_URL: stack.upstash.url,
  EDGESTATS_UPSTASH_TOKEN: stack.token,
};
console.log(`test stack: redis ${stack.redisUrl}, upstash ${stack.upstash.url}`);
const dir = mkdtempSync(join(tmpdir(), "edgestats-test-"));
const results = join(dir, "results.json");
const args = [
  "node_modules/vitest/vitest.mjs",
  "run",
  "--reporter=default",
  "--reporter=json",
  `--outputFile.json=${results}`,
  ...process.argv.slice(2),
];
const vitest = spawn(process.execPath, args, { stdio: "inherit", env });
// Stopped with us (the stack's redis-server is too, see dev/redis.ts) when a CI timeout signals only this process.
onExit(() => vitest.kill("SIGTERM"));
const code: number = await new Promise((ok) => vitest.on("exit", (c, signal) => ok(c ?? (signal ? 1 : 0))));
await stack.stop();
if (existsSync(results)) {
  const r = JSON.parse(readFileSync(results, "utf8")) as {
    numPassedTests: number;
    numFailedTests: number;
    numPendingTests: number;
    numTodoTests: number;
  };
  console.log(
    `\ntests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`,
  );
}
rmSync(dir, { recursive: true, force: true });
process.exit(code);
