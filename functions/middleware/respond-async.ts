import type { Context } from "hono";
import { StorageUnavailableError } from "../../src/errors.ts";
import type * as ingest from "../../src/ingest/index.ts";
import type { QueuedBody } from "../schemas.ts";
import type { AppEnv } from "../types.ts";

/**
 * Hands a write to the ingest queue; the routes reach it through `queueIfAsync` of ./context.ts,
 * which decides that the request asks for it (`Prefer: respond-async`) and the deployment has the
 * INGEST_QUEUE binding, and loads this module only then. The items are
 * validated by the library exactly as the synchronous write validates them (a
 * bad request throws its 400 and nothing is queued), stamped with the
 * request's time, and sent in messages of at most 100 KB (100 per sendBatch).
 * With an Idempotency-Key, each message carries a dedupe id derived from the
 * caller's key record, so the consumer applies a retried request once.
 */
export async function queueWrite(
  c: Context<AppEnv>,
  queue: Queue<unknown>,
  kind: ingest.IngestKind,
  name: string,
  items: unknown[],
): Promise<QueuedBody> {
  const config = c.get("config");
  const now = c.get("now");
  // The ingest library (which reaches every feature's) is loaded only for a queued write, so a
  // route's module does not carry the other features' code (functions/routes/index.ts).
  const ingest = await import("../../src/ingest/index.ts");
  const accepted = await ingest.acceptItems(kind, name, items, config.keyPrefix, now, {
    trendingRetentionHours: config.trendingRetentionHours,
    presenceTimeoutSeconds: config.presenceTimeoutSeconds,
  });
  const requestId = c.get("requestId");
  // the record key ends with a digest of (caller, method, path, Idempotency-Key)
  const idempotencyId = c.get("idempotency")?.key.split(":").pop();
  const messages = ingest.toMessages({ kind, name, t: now, r: requestId, idempotencyId }, accepted);
  try {
    for (const batch of ingest.sendBatches(messages))
      await queue.sendBatch(batch.map((body) => ({ body, contentType: "json" as const })));
  } catch (error) {
    throw new StorageUnavailableError(
      "The ingest queue did not accept the request; retry (with an Idempotency-Key, parts already queued are applied once).",
      { cause: error },
    );
  }
  c.header("Preference-Applied", "respond-async");
  return { queued: items.length, requestId };
}
