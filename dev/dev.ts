/**
 * `npm run dev`: Redis (data kept in .data/ with AOF), the local Upstash
 * server, and `wrangler dev`, with the cron triggers fired on their schedule.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { startStack } from "./stack.ts";
import { CronSchedule } from "./cron.ts";

const PORT = Number(process.env.PORT ?? 8787);
const KEYS = { ingest: "dev-ingest-key-0001", read: "dev-read-key-00001", admin: "dev-admin-key-0001" };

const stack = await startStack({ dataDir: ".data/redis", token: "dev-token" });

// wrangler dev reads secrets from .dev.vars; keep the user's other lines.
const vars: Record<string, string> = {
  UPSTASH_REDIS_REST_URL: stack.upstash.url,
  UPSTASH_REDIS_REST_TOKEN: stack.token,
  INGEST_KEYS: KEYS.ingest,
  READ_KEYS: KEYS.read,
  ADMIN_KEYS: KEYS.admin,
};
const existing = existsSync(".dev.vars") ? readFileSync(".dev.vars", "utf8").split("\n") : [];
const kept = existing.filter((line) => !Object.keys(vars).some((k) => line.startsWith(`${k}=`)) && line.trim() !== "");
// QStash signing keys stay empty unless the user set them (then the jobs endpoint takes an admin key).
const optional = ["QSTASH_CURRENT_SIGNING_KEY", "QSTASH_NEXT_SIGNING_KEY"].filter(
  (k) => !kept.some((line) => line.startsWith(`${k}=`)),
);
writeFileSync(
  ".dev.vars",
  [...kept, ...Object.entries(vars).map(([k, v]) => `${k}=${v}`), ...optional.map((k) => `${k}=`)].join("\n") + "\n",
);

const wrangler = spawn(
  process.execPath,
  [
    "node_modules/wrangler/bin/wrangler.js",
    "dev",
    "--port",
    String(PORT),
    "--ip",
    "127.0.0.1",
    "--test-scheduled",
    "--show-interactive-dev-session=false",
  ],
  { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
);

const base = `http://127.0.0.1:${PORT}`;
const crons = new CronSchedule(readFileSync("wrangler.toml", "utf8"));
let timer: ReturnType<typeof setInterval> | undefined;
/**
 * Fires due crons through wrangler's scheduled-handler endpoint (enabled by --test-scheduled). The
 * Worker is served unbundled (wrangler.toml `no_bundle`), so wrangler cannot add its `/__scheduled`
 * middleware; `/cdn-cgi/handler/scheduled` is miniflare's own.
 */
function startCrons() {
  timer = setInterval(async () => {
    for (const cron of crons.due(new Date())) {
      await fetch(`${base}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent(cron)}`).catch((e) =>
        console.error(`cron ${cron}: ${e}`),
      );
    }
  }, 1000);
}

void (async () => {
  for (let i = 0; i < 120; i++) {
    // deep=1 (with a key) also checks Redis through the local Upstash server.
    const ok = await fetch(`${base}/healthz?deep=1`, { headers: { authorization: `Bearer ${KEYS.read}` } }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) {
      startCrons();
      console.log(`\nedgestats is running at ${base}
  dashboard  ${base}/
  API docs   ${base}/docs
  API keys   ingest=${KEYS.ingest}  read=${KEYS.read}  admin=${KEYS.admin}
  Redis      ${stack.redisUrl} (data in .data/redis)   local Upstash ${stack.upstash.url} (token ${stack.token})
  cron       ${crons.expressions.join(", ")} fired on schedule
  queues     edgestats-ingest (+ dead-letter queue) simulated by wrangler dev: Prefer: respond-async works\n`);
      return;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  console.error("wrangler dev did not answer /healthz within 60 s");
})();

async function shutdown() {
  clearInterval(timer);
  wrangler.kill("SIGTERM");
  await stack.stop();
  process.exit(0);
}
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
wrangler.on("exit", async (code) => {
  clearInterval(timer);
  await stack.stop();
  process.exit(code ?? 0);
});
