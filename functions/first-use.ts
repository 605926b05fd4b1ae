/**
 * `load()` on first use, its value kept for the isolate's life (a failed load is tried again by
 * the next call). Until a value is kept, each call runs `load()` itself rather than awaiting a
 * promise that another request started: on Workers a promise belongs to the request that made it,
 * and when that request is cancelled (its client went away) before the promise settles, every
 * request awaiting it hangs until workerd cancels it too ("the Worker's code had hung"). For an
 * `import()` this costs nothing: V8 loads and evaluates the module once, and a second import of it
 * resolves to the same namespace.
 */
export function onFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let kept: { value: T } | undefined;
  return async () => {
    if (kept) return kept.value;
    const value = await load();
    kept ??= { value };
    return kept.value;
  };
}
