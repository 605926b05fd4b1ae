/**
 * Queued ingest (`Prefer: respond-async`): the producer side validates a request's items with
 * the library's own checks and cuts them into queue messages; the consumer merges a batch per
 * target and applies each group exactly once; its figures are read back as a status.
 */
export {
  consumeBatch,
  retryDelaySeconds,
  MAX_GROUP_ITEMS,
  type ConsumeOptions,
  type QueuedMessage,
} from "./consume.ts";
export { DEFAULT_MAX_RETRIES, deadLetterBody, type DeadLetterItem } from "./dead-letter.ts";
export { status, type BatchStats, type IngestStatus } from "./ingest.ts";
export { jobs } from "./jobs.ts";
export { sendBatches, toMessages, type IngestKind, type IngestMessage } from "./message.ts";
export type { IngestSettings } from "./plan.ts";
export { acceptItems } from "./validate.ts";
