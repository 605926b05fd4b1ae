/**
 * A virtual clock for Redis expiry (review 4's, shared with review 10's histogram model). The
 * scripts set TTLs relative to the virtual now (EXPIRE of `deadline - now`), and the virtual now runs
 * far ahead of the real clock, so Redis's own expiry would be wrong either way. After every call
 * that may set a TTL, `settle` turns each TTL it finds into a virtual deadline (virtual now + PTTL,
 * to the second: the scripts round up to seconds and the virtual now is on whole seconds) and
 * PERSISTs the key; `expireUntil` deletes the keys whose virtual deadline has passed, which is what
 * Redis would do at that time.
 */
import { command, keysUnder, type RestTarget } from "./upstash-rest.ts";

export class VirtualExpiry {
  deadlines = new Map<string, number>();
  private readonly target: RestTarget;
  private readonly prefix: string;
  constructor(target: RestTarget, prefix: string) {
    this.target = target;
    this.prefix = prefix;
  }

  /** `only`: the only keys the call may have set a TTL on (e.g. an observe's days and months); default all. */
  async settle(now: number, only?: string[]): Promise<void> {
    const keys = only ?? (await keysUnder(this.target, this.prefix));
    for (let i = 0; i < keys.length; i += 500) {
      const batch = keys.slice(i, i + 500);
      const ttls = await command<number[]>(
        this.target,
        "EVAL",
        `local out = {}
for i, k in ipairs(KEYS) do
  local t = redis.call('PTTL', k)
  out[i] = t
  if t > 0 then redis.call('PERSIST', k) end
end
return out`,
        batch.length,
        ...batch,
      );
      batch.forEach((key, j) => {
        const t = Number(ttls[j]);
        if (t > 0) this.deadlines.set(key, Math.ceil((now + t) / 1000) * 1000);
      });
    }
  }

  async expireUntil(now: number): Promise<void> {
    const gone = [...this.deadlines].filter(([, until]) => until <= now).map(([key]) => key);
    for (const key of gone) this.deadlines.delete(key);
    for (let i = 0; i < gone.length; i += 500) await command(this.target, "DEL", ...gone.slice(i, i + 500));
  }
}
