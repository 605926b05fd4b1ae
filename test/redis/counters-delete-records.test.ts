/**
 * The idempotency records of a member delete run in parts (src/counters/counters.ts
 * `deleteMember`, `deletePartRecord`): what the range's script's look at the parts' records costs,
 * and when it is sent at all (only with a key, only for a plan past one script's 600 keys), and the
 * records a failed call leaves, named by their days.
 */
import { describe, expect, it } from "vitest";
import { deleteMember, increment, type IncrItem } from "../../src/counters/index.ts";
import { deletePartRecord, deleteSlices } from "../../src/counters/counters.ts";
import { keyOf } from "../../src/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR } from "../../src/time.ts";
import { counterState, rollupMismatches } from "../helpers/counter-state.ts";
import { libraryTest } from "../helpers/library.ts";
import { keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("delrecords", { timeoutMs: 30_000 });
const { target, prefix } = lib;
const faulty = lib.faultProxy();
const NOW = Date.UTC(2026, 10, 22, 12, 30);
const ctx = lib.ctx(NOW);
const { stateOf } = counterState(lib);
const TAG = `delrec-${Math.random().toString(36).slice(2, 8)}`;
const counted = {
  ...ctx,
  redis: createRedis({ url: target.url, token: `${target.token}.${TAG}`, timeoutMs: 30_000 }),
};
const idemOf = (name: string) => ({ key: keyOf(prefix, "idem", name), fingerprint: `fp-${name}` });

async function hours(name: string, from: number, end: number, every = 1) {
  const items: IncrItem[] = [];
  for (let t = from; t < end; t += every * HOUR) items.push({ member: "d", period: "hour", at: t });
  for (let i = 0; i < items.length; i += 1000) await increment(ctx, name, items.slice(i, i + 1000));
}

/** Commands and requests of one deleteMember call on the counted client. */
async function costOf(run: () => Promise<unknown>) {
  await resetStats(target, TAG);
  await run();
  return statsOf(target, TAG);
}

describe("counters.deleteMember: the parts' records", () => {
  const F = Date.UTC(2026, 9, 1);

  it("a key on a plan within one script's keys costs the record's 2 commands, no look at part records", async () => {
    const opts = { period: "hour" as const, from: F, to: F + 5 * DAY - HOUR };
    await hours("fit-a", F, F + 5 * DAY);
    await hours("fit-b", F, F + 5 * DAY);
    await deleteMember(counted, "fit-a", "nobody", opts);
    const plain = await costOf(() => deleteMember(counted, "fit-a", "d", opts));
    const keyed = await costOf(() => deleteMember(counted, "fit-b", "d", opts, idemOf("fit-b")));
    expect(plain.requests).toBe(1);
    expect(keyed.requests).toBe(1);
    expect(keyed.commands - plain.commands).toBe(2);
  });

  it("a key on a plan past 600 keys whose member fits one script: one EXISTS of the part records more, one script", async () => {
    // 22 days of hours (2 parts), the member in 2 days only: one script deletes it
    const opts = { period: "hour" as const, from: F, to: F + 22 * DAY - HOUR };
    expect(deleteSlices(prefix, "x", "hour", F, F + 22 * DAY)).toHaveLength(2);
    await hours("wide-a", F + 3 * DAY, F + 5 * DAY);
    await hours("wide-b", F + 3 * DAY, F + 5 * DAY);
    await deleteMember(counted, "wide-a", "nobody", opts);
    const plain = await costOf(() => deleteMember(counted, "wide-a", "d", opts));
    let removed = 0;
    const keyed = await costOf(async () => {
      removed = (await deleteMember(counted, "wide-b", "d", opts, idemOf("wide-b"))).removed;
    });
    expect(removed).toBe(48);
    expect(plain.requests).toBe(1);
    expect(keyed.requests).toBe(1);
    expect(keyed.commands - plain.commands).toBe(2 + 1);
    // and no part record: the call ran as one script, its record the key's own
    expect(await keysUnder(target, idemOf("wide-b").key)).toEqual([]);
  });

  it("a call failing after its first part leaves that part's record, named by its days; the retry replays it and carries its count", async () => {
    const name = "failed";
    const opts = { period: "hour" as const, from: F, to: F + 22 * DAY - HOUR };
    const slices = deleteSlices(prefix, name, "hour", F, F + 22 * DAY);
    expect(slices).toHaveLength(2);
    const [a0, b0] = slices[0]!;
    const [a1, b1] = slices[1]!;
    await hours(name, F, F + 22 * DAY);
    const idem = idemOf(name);
    const c = { ...ctx, redis: faulty.redis };
    await deleteMember(c, name, "nobody", opts);
    faulty.proxy.set({ fault: { kind: "reset" }, times: 1, after: 2 });
    await expect(deleteMember(c, name, "d", opts, idem)).rejects.toThrow();
    faulty.proxy.heal();
    expect(await keysUnder(target, idem.key)).toEqual([deletePartRecord(idem.key, a0, b0)]);
    // the rest fits one script, yet the retry runs as parts: part 0 replayed, part 1 the key's own
    expect(await deleteMember(ctx, name, "d", opts, idem)).toEqual({ removed: (b1 - a0) / HOUR, replayed: false });
    const st = await stateOf(name);
    expect([...st.hours.values()].filter((m) => m.has("d"))).toEqual([]);
    expect(rollupMismatches(st, true)).toEqual([]);
    expect(b1).toBe(F + 22 * DAY);
    expect(a1).toBe(b0);
  });
});
