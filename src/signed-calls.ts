/**
 * A QStash-signed call runs once: its first arrival claims its signature in Redis until the
 * signature expires, and a replay of the same signed request (a proxy's or a log's copy, sent
 * again within the signature's 5 minutes) finds the claim taken (review 20). QStash signs every
 * delivery, retries included, anew. The Worker's functions/middleware/qstash.ts calls these.
 */
import { StorageUnavailableError } from "./errors.ts";
import { keyOf } from "./keys.ts";
import type { RedisClient } from "./redis/client.ts";
import { defineScript } from "./redis/script.ts";

/** Claims a signature; 1 when this call is its first, 0 for a replay. */
export const claimScript = defineScript({
  name: "qstash.claim",
  write: true,
  keys: ["claim"],
  args: ["ttlMs"],
  lua: `
-- the claim goes when the signature expires: no later call could present it
if redis.call('SET', claim, 1, 'NX', 'PX', ttlMs) then return 1 end
return 0
`,
});

/** Gives a claim back (a run that failed: QStash's retry may come with the same signature). */
export const releaseScript = defineScript({
  name: "qstash.release",
  write: true,
  keys: ["claim"],
  args: [],
  lua: `
redis.call('DEL', claim)
return 1
`,
});

/** `<prefix>:qstash:<id>`: the claim of the signature `id` (its MAC's bytes, in hex). */
export const claimKey = (prefix: string, id: string) => keyOf(prefix, "qstash", id);

/** Whether this is the signature's first call (one Redis call); an unreachable Redis is a 503. */
export async function claimSignature(redis: RedisClient, prefix: string, id: string, ttlMs: number): Promise<boolean> {
  try {
    const ttl = Math.max(1000, Math.ceil(ttlMs));
    return Number((await claimScript.run<number>(redis, { claim: claimKey(prefix, id) }, { ttlMs: ttl })).value) === 1;
  } catch (error) {
    if (error instanceof StorageUnavailableError) throw error;
    throw new StorageUnavailableError(undefined, { cause: error });
  }
}

/** Gives the claim back, best effort: a failure leaves it to expire with the signature. */
export async function releaseSignature(redis: RedisClient, prefix: string, id: string): Promise<void> {
  try {
    await releaseScript.run(redis, { claim: claimKey(prefix, id) }, {});
  } catch {
    // (the run already failed; its answer stands)
  }
}
