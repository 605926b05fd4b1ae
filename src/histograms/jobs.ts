/**
 * Histograms have no periodic job: every key of their data expires on its own
 * (a day's buckets and extremes, and a month's rollup, `retentionDays` after
 * their last day ends), a read deletes its scratch union in the same script,
 * and listing drops the names whose data has all expired from the registry.
 * The settings hash is kept until DELETE on purpose: the next observation
 * needs its bucket width.
 */
import type { Job } from "../jobs.ts";

export const jobs: Record<string, Job> = {};
