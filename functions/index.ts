import { createApp } from "./app.ts";
import { consumeIngest } from "./queue.ts";
import { runScheduled } from "./scheduled.ts";

export const app = createApp();

export default {
  fetch: app.fetch,
  scheduled(controller, env, ctx) {
    // The cron picks the jobs; the library does the work after the trigger returns.
    ctx.waitUntil(runScheduled(controller.cron, controller.scheduledTime, env));
  },
  // Queued ingest (Prefer: respond-async): every message is acked or retried before this returns.
  async queue(batch, env) {
    await consumeIngest(batch, env);
  },
} satisfies ExportedHandler<Env>;
