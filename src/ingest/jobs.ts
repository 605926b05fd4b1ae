/**
 * Queued ingest has no periodic job: its applied sets and per-minute stats expire on their own
 * (EXPIRE NX when first written), and the queue itself drives the consumer.
 */
import type { Job } from "../jobs.ts";

export const jobs: Record<string, Job> = {};
