/** API keys the worker test project is configured with (see vitest.config.ts); at least 16 characters, as the Worker requires. */
export const TEST_KEYS = {
  ingest: "test-ingest-key-0001",
  read: "test-read-key-00001",
  admin: "test-admin-key-0001",
} as const;
/** A second ingest key (rotation; idempotency per caller). */
export const TEST_INGEST_KEY_2 = "test-ingest-key-0002";
/** QStash signing keys of the worker test project. */
export const TEST_SIGNING_KEYS = { current: "sig_current_test_key", next: "sig_next_test_key" } as const;
