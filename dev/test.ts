/**
 * `npm test`: starts a throwaway redis-server and the local Upstash server,
 * runs every vitest project against them, and stops them. Extra arguments go
 * to vitest (`npm test -- test/worker/trending` runs one folder).
 */
import { spawn } from "node:child_process";
import { startStack } from "./stack.ts";

const stack = await startStack();
const env = {
  ...process.env,
  EDGESTATS_REDIS_URL: stack.redisUrl,
  EDGESTATS_UPSTASH_URL: stack.upstash.url,
  EDGESTATS_UPSTASH_TOKEN: stack.token,
};
console.log(`test stack: redis ${stack.redisUrl}, upstash ${stack.upstash.url}`);
const vitest = spawn(process.execPath, ["node_modules/vitest/vitest.mjs", "run", ...process.argv.slice(2)], { stdio: "inherit", env });
const code: number = await new Promise((ok) => vitest.on("exit", (c, signal) => ok(c ?? (signal ? 1 : 0))));
await stack.stop();
process.exit(code);
