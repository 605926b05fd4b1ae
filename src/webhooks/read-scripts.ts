import { NotFoundError } from "../errors.ts";
import { defineScript } from "../redis/script.ts";

/** Every webhook: `[name, settings JSON, ...]` (at most MAX_WEBHOOKS, so one HGETALL). */
export const listScript = defineScript({
  name: "webhooks.list",
  write: false,
  keys: ["hooks"],
  args: [],
  lua: `return redis.call('HGETALL', hooks)`,
});

/** A webhook's delivery log, newest first; refuses an unknown webhook. */
export const deliveriesScript = defineScript({
  name: "webhooks.deliveries",
  write: false,
  keys: ["hooks", "log"],
  args: ["name", "limit"],
  refusals: { not_found: (_r, call) => new NotFoundError(`No webhook '${String(call.args.name)}'.`) },
  lua: `
if redis.call('HEXISTS', hooks, name) == 0 then return {refused = 'not_found'} end
return redis.call('LRANGE', log, 0, tonumber(limit) - 1)
`,
});
