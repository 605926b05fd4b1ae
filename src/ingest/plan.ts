/**
 * Planning a queued write with the library's own code: each library write
 * (recordEvents, increment, heartbeat) runs against a capturing Redis client
 * that records the one EVALSHA it would send instead of sending it. So a queued
 * request is validated exactly as the synchronous call (same checks, same
 * errors), and the consumer's writes use the same scripts with the same KEYS
 * and ARGV the synchronous path builds: same keys, same first-touch
 * bookkeeping, data indistinguishable from synchronous writes.
 */
import type { Ctx } from "../context.ts";
import { increment, parseBucketTime, type IncrItem } from "../counters/index.ts";
import { heartbeat } from "../presence/index.ts";
import type { RedisClient } from "../redis/client.ts";
import { scriptSha } from "../redis/script.ts";
import { hourIndex, periodStart } from "../time.ts";
import { record as recordEvents, type TrendingEvent } from "../trending/index.ts";
import { MAX_BATCH, MAX_INCREMENT } from "../validation.ts";
import { listOf, type IngestKind, type IngestMessage } from "./message.ts";
import { libraryScripts } from "./scripts.ts";

/** Settings the library writes take from the deployment's config. */
export interface IngestSettings {
  trendingRetentionHours: number;
  presenceTimeoutSeconds: number;
}

/** One library script call: what its `run` would have sent (the idempotency prelude's slots included). */
export interface Call {
  keys: string[];
  args: string[];
}

/** Presence heartbeats of one room within this many ms of each other are applied together, at the latest one's time. */
export const PRESENCE_WINDOW_MS = 5000;

/** What a write script's run parses from the capturing client: a first write with an empty result. */
const CAPTURED_RESULT = '{"replayed":false,"value":[]}';

/**
 * Runs a library write against a client that records its EVALSHA instead of sending it. A write
 * that made its call passed every check; what it then makes of the empty result is no concern.
 */
export async function capture(
  kind: IngestKind,
  prefix: string,
  now: number,
  write: (ctx: Ctx) => Promise<unknown>,
): Promise<Call> {
  const calls: (Call & { sha: string })[] = [];
  const record = async (sha: string, keys: string[], args: string[]) => {
    calls.push({ sha, keys: [...keys], args: args.map(String) });
    return CAPTURED_RESULT;
  };
  const redis = { evalsha: record, eval: record, ping: async () => "PONG" } as unknown as RedisClient;
  try {
    await write({ redis, prefix, now });
  } catch (error) {
    if (calls.length === 0) throw error;
  }
  const [call, ...more] = calls;
  const sha = await scriptSha(libraryScripts[kind]);
  if (!call || more.length > 0 || call.sha !== sha)
    throw new Error(`ingest: the ${kind} write did not make exactly one ${libraryScripts[kind].name} call`);
  return { keys: call.keys, args: call.args };
}

/** The library call for one kind of write, on one list of items. */
export function libraryWrite(
  message: Pick<IngestMessage, "kind" | "name">,
  items: unknown[],
  settings: IngestSettings,
  sentAt?: readonly number[],
): (ctx: Ctx) => Promise<unknown> {
  if (message.kind === "trending") {
    return (ctx) =>
      recordEvents(ctx, message.name, items as TrendingEvent[], { retentionHours: settings.trendingRetentionHours });
  }
  // queued: a score out of range raises an error rather than returning a refusal the apply script would ignore
  if (message.kind === "counters")
    return (ctx) => increment(ctx, message.name, items as IncrItem[], undefined, { queued: true });
  // queued: the answer is dropped, so a late heartbeat need not pay the command that makes it
  return (ctx) =>
    heartbeat(
      ctx,
      message.name,
      items as string[],
      { timeoutSeconds: settings.presenceTimeoutSeconds, sentAt },
      { queued: true },
    );
}

/** Splits an amount into parts no larger than MAX_INCREMENT (a merged sum may exceed what one item may carry). */
function parts(total: number): number[] {
  const out: number[] = [];
  let left = total;
  while (Math.abs(left) > MAX_INCREMENT) {
    const step = Math.sign(left) * MAX_INCREMENT;
    out.push(step);
    left -= step;
  }
  out.push(left);
  return out;
}

function chunks<T>(list: T[], size = MAX_BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

type TrendingItem = Extract<IngestMessage, { kind: "trending" }>["events"][number];
type CounterItem = Extract<IngestMessage, { kind: "counters" }>["items"][number];

/** What trending events merge by: the hour and the member. */
function trendingKey(e: TrendingItem): string {
  return `${hourIndex(e.at)}\n${e.member}`;
}

/** What counter items merge by: the period bucket (none for the plain counter) and the member. */
function counterKey(item: CounterItem): string {
  const at = item.at === undefined ? undefined : (parseBucketTime(item.at) as number);
  const bucket = item.period === undefined || at === undefined ? "" : `${item.period}:${periodStart(item.period, at)}`;
  return `${bucket}\n${item.member}`;
}

/**
 * The entries a message's items merge into (one per item; equal keys merge), which is what an
 * apply script's work grows with: the consumer bounds each script by these, not by raw items.
 */
export function mergeKeys(message: IngestMessage): string[] {
  if (message.kind === "trending") return message.events.map(trendingKey);
  if (message.kind === "counters") return message.items.map(counterKey);
  const slot = Math.floor(message.t / PRESENCE_WINDOW_MS);
  return message.ids.map((id) => `${slot}\n${id}`);
}

/** Trending: one event per (hour, member) with the summed count. */
function mergeTrending(messages: Extract<IngestMessage, { kind: "trending" }>[]): TrendingEvent[] {
  const sums = new Map<string, { member: string; count: number; at: number }>();
  for (const m of messages) {
    for (const e of m.events) {
      const key = trendingKey(e);
      const seen = sums.get(key);
      if (seen) {
        seen.count += e.count;
        seen.at = Math.max(seen.at, e.at);
      } else sums.set(key, { ...e });
    }
  }
  return [...sums.values()].flatMap((e) => parts(e.count).map((count) => ({ member: e.member, count, at: e.at })));
}

/**
 * Counters: one item per (period bucket, member) with the summed `by`, the
 * largest ttl (the library gives a key the largest ttl of its items anyway)
 * and the latest `at` in the bucket (valid wherever the item with that ttl was).
 */
function mergeCounters(messages: Extract<IngestMessage, { kind: "counters" }>[]): IncrItem[] {
  const sums = new Map<string, IncrItem & { by: number }>();
  for (const m of messages) {
    for (const item of m.items) {
      const at = item.at === undefined ? undefined : (parseBucketTime(item.at) as number);
      const key = counterKey(item);
      const seen = sums.get(key);
      if (!seen) {
        sums.set(key, { member: item.member, by: item.by ?? 1, period: item.period, at, ttl: item.ttl });
        continue;
      }
      seen.by += item.by ?? 1;
      if (at !== undefined) seen.at = Math.max(Number(seen.at ?? at), at);
      if (item.ttl !== undefined) seen.ttl = Math.max(seen.ttl ?? 0, item.ttl);
    }
  }
  const clean = (item: IncrItem): IncrItem =>
    Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined)) as unknown as IncrItem;
  return [...sums.values()].flatMap((item) => parts(item.by).map((by) => clean({ ...item, by })));
}

/** A group's messages and the library calls that apply them all. */
export interface GroupPlan {
  kind: IngestKind;
  name: string;
  calls: Call[];
  /** Items the group's messages carry (events, increments, ids). */
  items: number;
}

/**
 * Plans one target's messages (same kind and name, all valid): merged, then
 * cut into library calls of at most 1,000 items. Presence heartbeats are
 * applied per PRESENCE_WINDOW_MS window at the latest time in it (a heartbeat
 * is never dated earlier than it was sent, and at most 5 s later); each id's
 * own latest time in the window goes with it (sentAt), which the script compares
 * a leave with: an id's heartbeat sent before its leave stays before it, whatever
 * other ids of the window were sent after (review 12).
 */
export async function planGroup(
  messages: IngestMessage[],
  prefix: string,
  now: number,
  settings: IngestSettings,
): Promise<GroupPlan> {
  const first = messages[0];
  if (!first) throw new Error("ingest: empty group");
  const { kind, name } = first;
  const items = messages.reduce((n, m) => n + listOf(m).length, 0);
  const calls: Call[] = [];
  if (kind === "presence") {
    // per window: its latest time, and each id's own latest time in it
    const windows = new Map<number, { at: number; ids: Map<string, number> }>();
    for (const m of messages as Extract<IngestMessage, { kind: "presence" }>[]) {
      const slot = Math.floor(m.t / PRESENCE_WINDOW_MS);
      let w = windows.get(slot);
      if (!w) windows.set(slot, (w = { at: m.t, ids: new Map() }));
      w.at = Math.max(w.at, m.t);
      for (const id of m.ids) w.ids.set(id, Math.max(w.ids.get(id) ?? m.t, m.t));
    }
    for (const slot of [...windows.keys()].sort((a, b) => a - b)) {
      const w = windows.get(slot) as { at: number; ids: Map<string, number> };
      // no list when every id's time is the window's (one message, or all sent in the same ms)
      const uniform = [...w.ids.values()].every((t) => t === w.at);
      for (const ids of chunks([...w.ids.keys()])) {
        const sentAt = uniform ? undefined : ids.map((id) => w.ids.get(id) as number);
        calls.push(await capture(kind, prefix, w.at, libraryWrite(first, ids, settings, sentAt)));
      }
    }
    return { kind, name, calls, items };
  }
  const merged =
    kind === "trending"
      ? mergeTrending(messages as Extract<IngestMessage, { kind: "trending" }>[])
      : mergeCounters(messages as Extract<IngestMessage, { kind: "counters" }>[]);
  for (const list of chunks<unknown>(merged))
    calls.push(await capture(kind, prefix, now, libraryWrite(first, list, settings)));
  return { kind, name, calls, items };
}
