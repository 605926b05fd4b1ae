/**
 * The per-key rate limiter counts in fixed 10 s windows (src/ratelimit.ts): a test that counts
 * requests against it must run them inside one window. The rate-limit tests and review 3's each
 * had their own copy of this.
 */

/** Waits until at least 4 s of the current 10 s limiter window are left. */
async function freshWindow(api: { stats(): Promise<unknown> }): Promise<void> {
  // workerd moves Date.now() only on I/O, so each wait asks the local server something.
  while (Date.now() % 10_000 > 6_000) {
    await new Promise((r) => setTimeout(r, 100));
    await api.stats();
  }
}

/**
 * Runs `steps` inside one limiter window of `api`'s. On a loaded CI machine the window can still
 * roll over half way (the counts restart); then the steps failed for that reason alone and run
 * again, from a clean keyspace (`api`'s keys deleted), in the next window.
 */
export async function inOneWindow(
  api: { stats(): Promise<unknown>; cleanup(): Promise<unknown> },
  steps: () => Promise<void>,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await freshWindow(api);
    const window = Math.floor(Date.now() / 10_000);
    try {
      return await steps();
    } catch (error) {
      if (attempt === 3 || Math.floor(Date.now() / 10_000) === window) throw error;
      await api.cleanup();
    }
  }
}
