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
 * request's time, and sent in messages of at most 100 KB, in one sendBatch; null when they need
 * more than one (the route then writes synchronously).
 * With an Idempotency-Key, each message carries a dedupe id derived from the
 * caller's key record and the body, so the consumer applies a retried request once.
 */
export async function queueWrite(
  c: Context<AppEnv>,
  queue: Queue<unknown>,
  kind: ingest.IngestKind,
  name: string,
  items: unknown[],
): Promise<QueuedBody | null> {
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
  // The record key ends with a digest of (caller, method, path, Idempotency-Key); the body's
  // fingerprint joins it (its canonical JSON's digest rides along in `c`: the consumer dedupes on
  // either). Nothing is checked before this 202, so a reused key with another body
  // cannot be refused as the synchronous write refuses it (409): it must then be applied, not
  // dropped by the consumer as a copy of the first (that lost acknowledged writes, and half of a
  // request whose later parts had no namesake).
  const idempotency = c.get("idempotency");
  const idempotencyId = idempotency && `${idempotency.key.split(":").pop()}:${idempotency.fingerprint.slice(0, 16)}`;
  const messages = ingest.toMessages(
    {
      kind,
      name,
      t: now,
      r: requestId,
      idempotencyId,
      fingerprint: idempotency?.fingerprint,
      canonical: idempotency?.canonical,
    },
    accepted,
  );
  const batches = ingest.sendBatches(messages);
  // One sendBatch is all or nothing; two are not: a failure of the second would answer 503 with the
  // first part queued and then applied. Such a request (over ~240 KB) is written synchronously
  // instead, which is atomic: `Prefer` is a preference, and no Preference-Applied says so.
  if (batches.length !== 1) return null;
  try {
    await queue.sendBatch((batches[0] ?? []).map((body) => ({ body, contentType: "json" as const })));
  } catch (error) {
    throw new StorageUnavailableError("The ingest queue did not accept the request; nothing was queued. Retry.", {
      cause: error,
    });
  }
  c.header("Preference-Applied", "respond-async");
  return { queued: items.length, requestId };
}
