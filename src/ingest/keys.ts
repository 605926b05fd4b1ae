import { keyOf } from "../keys.ts";
import { dayLabel, hourLabel } from "../time.ts";

/**
 * Keys of queued ingest. `applied:<day>` is the set of dedupe ids (message ids,
 * or Idempotency-Key ids) the consumer applied on that UTC day (consumer's
 * clock); `parts:<day>` a hash of the aged-out parts those messages left out
 * and not yet dead-lettered (their item indexes by dedupe id); `stats:<hour>` a hash of
 * per-minute consumer counters.
 */
export const ingestKeys = {
  applied: (prefix: string, ms: number) => keyOf(prefix, "ingest", "applied", dayLabel(ms)),
  parts: (prefix: string, ms: number) => keyOf(prefix, "ingest", "parts", dayLabel(ms)),
  stats: (prefix: string, hour: number) => keyOf(prefix, "ingest", "stats", hourLabel(hour)),
};
