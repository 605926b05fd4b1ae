import type { Config } from "./config.ts";
import type { Ctx } from "./context.ts";

/** A periodic job: bounded work, idempotent, safe to overlap with another run of itself. */
export type Job = (ctx: Ctx, config: Config) => Promise<Record<string, number | string | boolean | null>>;
