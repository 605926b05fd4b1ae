/**
 * Counter writes (increments, in ./increment.ts, and deletes; the admin union is in union.ts, the
 * reads in reads.ts): named sorted-set counters, optionally bucketed by calendar period. Each
 * function is one script, so one Redis round trip, whatever the batch size.
 */
import type { Ctx } from "../context.ts";
import type { Idempotency, Written } from "../redis/script.ts";
import { periodEnd } from "../time.ts";
import { assertName } from "../validation.ts";
import { deleteCall, deleteOutside } from "./delete-layout.ts";
import { deleteMemberScript } from "./delete-script.ts";
import { cacheKeys, counterKeys as K, writeKeys } from "./keys.ts";
import { MAX_DELETE_KEYS, MAX_DELETE_READS } from "./limits.ts";
import { deleteScript } from "./drop.ts";
import { periodRange, type PeriodOptions } from "./select.ts";
import { checkMember } from "./validate.ts";

export { increment, type IncrItem, type IncrResult } from "./increment.ts";

/** Removes a member from the plain counter, or with `period` from each bucket in range. `removed`: how many keys held it. */
export async function deleteMember(
  ctx: Ctx,
  name: string,
  member: string,
  options: PeriodOptions = {},
  idempotency?: Idempotency,
): Promise<Written<{ removed: number }>> {
  assertName(name, "counter");
  checkMember(member);
  const range = periodRange(options, ctx.now);
  const end = range ? periodEnd(range.period, range.to) : 0;
  const { parts, layout } = range
    ? deleteCall(ctx.prefix, name, range.period, range.from, end)
    : { parts: [], layout: { buckets: 0, top: 0, kinds: [], firsts: [], lasts: [], olderFirsts: [], olderLasts: [] } };
  // the parts outside the range of its partial rollups, read only when one's sum reaches 0
  const outside = range
    ? deleteOutside(ctx.prefix, name, range.period, range.from, end, parts, layout.buckets)
    : { keys: [], outs: [] };
  const { value, replayed } = await deleteMemberScript.run<number>(
    ctx.redis,
    {
      ...writeKeys(ctx.prefix, name),
      parts: outside.keys.length > 0 ? [...parts, ...outside.keys] : parts,
    },
    {
      name,
      member,
      fromPlain: range ? 0 : 1,
      maxKeys: MAX_DELETE_KEYS,
      maxReads: MAX_DELETE_READS,
      now: ctx.now,
      planKeys: parts.length,
      ...layout,
      outs: outside.outs,
    },
    idempotency,
  );
  return { removed: value, replayed };
}

/** Deletes the counter: its plain key, every bucket (invisible at once, freed by the sweep job) and its registry entry. */
export async function deleteCounter(
  ctx: Ctx,
  name: string,
  idempotency?: Idempotency,
): Promise<Written<{ existed: boolean }>> {
  assertName(name, "counter");
  const { value, replayed } = await deleteScript.run<number>(
    ctx.redis,
    {
      plain: K.plain(ctx.prefix, name),
      index: K.index(ctx.prefix, name),
      names: K.names(ctx.prefix),
      expiry: K.expiry(ctx.prefix),
      purge: K.purge(ctx.prefix),
      caches: cacheKeys(ctx.prefix, name),
    },
    { name, now: ctx.now },
    idempotency,
  );
  return { existed: value === 1, replayed };
}
