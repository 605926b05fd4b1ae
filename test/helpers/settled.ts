/** A call's outcome as a value, so a model test compares answers and refusals alike. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: unknown };

export async function settled<T>(p: Promise<T>): Promise<Result<T>> {
  try {
    return { ok: true, value: await p };
  } catch (error) {
    return { ok: false, error };
  }
}

/** What `p` rejected with, or an Error("resolved") to fail the expectation that follows. */
export const failure = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => new Error("resolved"),
    (e: unknown) => e,
  );

/** `pending`'s outcome, or a rejection naming the bound once `ms` pass first (a hang must fail, not time the test out). */
export async function within<T>(ms: number, pending: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([pending, bound]);
  } finally {
    clearTimeout(timer);
  }
}
