import { createApp } from "./app.ts";
import { warmRedisClient } from "./middleware/context.ts";

export const app = createApp();
warmRedisClient();

export default {
  fetch: app.fetch,
  scheduled(controller, env, ctx) {
    // The cron picks the jobs; the library does the work after the trigger returns. The jobs'
    // modules (every feature's library) are loaded by the first trigger, not by every cold isolate.
    // A failed job rejects the promise after every job ran (runTrigger): the invocation is a failure.
    ctx.waitUntil(import("./scheduled.ts").then((m) => m.runTrigger(controller.cron, controller.scheduledTime, env)));
  },
  // Queued ingest (Prefer: respond-async): every message is acked or retried before this returns.
  async queue(batch, env) {
    const { consumeIngest } = await import("./queue.ts");
    await consumeIngest(batch, env);
  },
} satisfies ExportedHandler<Env>;
