/** A call's outcome as a value, so a model test compares answers and refusals alike. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: unknown };

export async function settled<T>(p: Promise<T>): Promise<Result<T>> {
  try {
    return { ok: true, value: await p };
  } catch (error) {
    return { ok: false, error };
  }
}
