/**
 * Histograms, the public API: the routes and the library use this module only
 * (`import * as histograms from ".../histograms/index.ts"`).
 */
export { list, observe, put, remove } from "./histograms.ts";
export { read } from "./reads.ts";
export type { HistogramInfo, HistogramSettings, ListOptions, Observation } from "./histograms.ts";
export type { HistogramSummary, ReadOptions } from "./reads.ts";
export type { Bucket } from "./buckets.ts";
export { MAX_RETENTION_DAYS } from "./keys.ts";
export { DEFAULT_TOP, MAX_BUCKET_WIDTH, MAX_LIST, MAX_TOP, MAX_UNIT_LENGTH } from "./validate.ts";
export { jobs } from "./jobs.ts";
