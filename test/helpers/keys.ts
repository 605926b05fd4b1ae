/** API keys the worker test project is configured with (see vitest.config.ts). */
export const TEST_KEYS = { ingest: "test-ingest-key", read: "test-read-key", admin: "test-admin-key" } as const;
/** QStash signing keys of the worker test project. */
export const TEST_SIGNING_KEYS = { current: "sig_current_test_key", next: "sig_next_test_key" } as const;
