import type { Config } from "../src/config.ts";
import type { Ctx } from "../src/context.ts";

/** A periodic job: bounded work, idempotent, safe to overlap with another run of itself. */
export type Job = (ctx: Ctx, config: Config) => Promise<Record<string, number | string | boolean | null>>;

/**
 * The jobs by name, for both the cron triggers and POST /internal/jobs/{job}.
 * Each feature registers its job here.
 */
export const JOBS: Record<string, Job> = {};

/** Which jobs each cron expression of wrangler.toml runs. */
export const CRON_JOBS: Record<string, string[]> = {
  "5 * * * *": ["compact"],
  "* * * * *": ["trim"],
};
