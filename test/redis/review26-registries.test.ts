/**
 * Review 26: the activity registries paged by cursor (src/redis/pages.ts `activityPageLua`) other
 * than the histograms' (fixed in review 25): the counters' `_names`, the leaderboards' `_boards`
 * and the presence rooms' `_rooms`, on real Redis (the local Upstash server) with injected clocks.
 * Two libraries on one prefix whose clocks are apart stand for two Workers (the service allows
 * clocks CLOCK_SKEW_MS, a minute, apart). A pass (first page, then `nextCursor` to the end) must
 * list every name present throughout at least once, whoever re-stamps a name mid-pass.
 */
import { describe, expect, it } from "vitest";
import { Edgestats, ValidationError } from "../../src/index.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { registryKey as boardsKey } from "../../src/leaderboards/keys.ts";
import { createTrimJob } from "../../src/presence/index.ts";
import { registryKeys as presenceKeys } from "../../src/presence/keys.ts";
import { CLOCK_SKEW_MS } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review26reg", { timeoutMs: 30_000 });
const { target } = lib;

const T0 = Date.UTC(2027, 4, 12, 12);
const MIN = 60_000;

/** Libraries on one prefix of their own, each with a clock the test moves (`at(offset)`: a Worker `offset` ms apart). */
function workers(label: string, start = T0) {
  const ctx = lib.ctx(start, label);
  const base = { now: start };
  const at = (offset = 0) => new Edgestats({ redis: lib.redis, prefix: ctx.prefix, clock: () => base.now + offset });
  return { prefix: ctx.prefix, base, at, stats: at(0) };
}

interface Page {
  names: string[];
  nextCursor: string | null;
}

/** A registry list, as pages of names. */
type Lister = (stats: Edgestats, o: { limit: number; cursor?: string; offset?: number }) => Promise<Page>;

const countersList: Lister = async (s, o) => {
  const p = await s.counters(o);
  return { names: p.counters, nextCursor: p.nextCursor };
};
const boardsList: Lister = async (s, o) => {
  const p = await s.boards(o);
  return { names: p.boards, nextCursor: p.nextCursor };
};
const roomsList: Lister = async (s, o) => {
  const p = await s.rooms(o);
  return { names: p.rooms, nextCursor: p.nextCursor };
};

/** Every name a pass by cursor lists (pages of `limit`), calling `between` after each page; the pass must end. */
async function pass(
  list: Lister,
  stats: Edgestats,
  limit: number,
  between: (page: number) => Promise<void> = async () => {},
): Promise<string[]> {
  const seen: string[] = [];
  let page = await list(stats, { limit });
  seen.push(...page.names);
  for (let n = 0; page.nextCursor !== null && n < 100; n += 1) {
    await between(n);
    page = await list(stats, { limit, cursor: page.nextCursor });
    seen.push(...page.names);
  }
  expect(page.nextCursor).toBeNull();
  return seen;
}

/** How each registry's write touches a name (creates it or re-stamps it as activity). */
interface Registry {
  label: string;
  list: Lister;
  key: (prefix: string) => string;
  /** A write that stamps `name` (new or again) at the library's clock. */
  touch: (stats: Edgestats, name: string) => Promise<unknown>;
  /** The gap before a re-touch restamps (presence: a room re-becomes active only after a timeout idle). */
  gap: number;
}

const REGISTRIES: Registry[] = [
  {
    label: "counters (plain)",
    list: countersList,
    key: (p) => counterKeys.names(p),
    touch: (s, name) => s.counter(name).incr({ member: "m" }),
    gap: 10_000,
  },
  {
    label: "counters (period)",
    list: countersList,
    key: (p) => counterKeys.names(p),
    touch: (s, name) => s.counter(name).incr({ member: "m", period: "day" }),
    // past the once-a-minute refresh (field r)
    gap: 2 * MIN,
  },
  {
    label: "leaderboards (join)",
    list: boardsList,
    key: boardsKey,
    touch: (s, name) => s.leaderboard(name).join(`p${Math.random().toString(36).slice(2, 8)}`, { name: "P" }),
    gap: 10_000,
  },
  {
    label: "leaderboards (configure)",
    list: boardsList,
    key: boardsKey,
    touch: (s, name) => s.leaderboard(name).configure({}),
    gap: 10_000,
  },
  {
    label: "presence rooms (heartbeat)",
    list: roomsList,
    key: (p) => presenceKeys(p).rooms,
    touch: (s, name) => s.presence(name).heartbeat("u1"),
    // a room is re-stamped when it becomes active again: after a whole timeout (300 s) without heartbeats
    gap: 30 * MIN,
  },
];

const score = (key: string, name: string) => command<string | null>(target, "ZSCORE", key, name);

// Found in review 26, fixed (stampLua, src/redis/pages.ts). Severity: medium (the histograms'
// review 25 miss, in every other registry).
// Each registry's write stamps a name with the writing Worker's clock (counters: `ZADD _names now`,
// not even GT; leaderboards: `ZADD _boards GT now` on configure and on a new player; presence:
// `ZADD _rooms GT now` when a room becomes active). A pass's first page records `high`, the
// highest stamp, which a Worker whose clock runs ahead (up to the minute allowed) may have
// written; a name not yet listed that a Worker whose clock lags then re-stamps lands below that
// `high` but above the cursor: ahead of the cursor, and the next phase lists only names above
// `high`, so the pass never lists it although it was listed throughout. Fixed (as
// src/histograms/listing.ts): stamp = max(now, the registry's highest + 1), in one shared Lua
// function of src/redis/pages.ts (+1 ZREVRANGE 0 0, only on the writes that move a stamp).
describe.each(REGISTRIES)("review 26: $label, between Workers whose clocks differ", (reg) => {
  it("a pass lists a name re-stamped mid-pass by a Worker whose clock lags the one that made the newest", async () => {
    const { stats, base, at } = workers(`skew${REGISTRIES.indexOf(reg)}`);
    const names = ["n0", "n1", "n2", "n3", "n4", "n5"];
    for (const [i, name] of names.entries()) {
      base.now = T0 + i * 1000;
      await reg.touch(stats, name);
    }
    base.now = T0 + reg.gap;
    // made by a Worker whose clock runs ahead (within the allowed skew)
    await reg.touch(at(CLOCK_SKEW_MS), "ahead");
    const seen = await pass(reg.list, stats, 2, async (page) => {
      // after the first page (ahead, n5): n0, not listed yet, is re-stamped by a Worker on time
      if (page === 0) await reg.touch(at(0), "n0");
    });
    for (const name of [...names, "ahead"]) expect(seen, name).toContain(name);
  });

  // Found in review 26, fixed, severity low (the same flaw without any skew): a name re-stamped in the
  // very millisecond of the newest stamp takes that stamp, equal to the pass's `high`; among equal
  // stamps names go in reverse byte order, so one sorting after the cursor's member lands ahead of
  // the cursor, and the next phase lists only stamps above `high`: missed. Same fix.
  it("a pass lists a name re-stamped in the millisecond of the newest stamp", async () => {
    const { stats, base } = workers(`samems${REGISTRIES.indexOf(reg)}`);
    for (const [i, name] of ["z", "m", "b"].entries()) {
      base.now = T0 + i * 1000;
      await reg.touch(stats, name);
    }
    base.now = T0 + reg.gap;
    await reg.touch(stats, "top");
    const seen = await pass(reg.list, stats, 1, async (page) => {
      // after the first page (top), in the same millisecond: z sorts before "top" among equal stamps (reverse byte order)
      if (page === 0) await reg.touch(stats, "z");
    });
    for (const name of ["top", "z", "m", "b"]) expect(seen, name).toContain(name);
  });

  // Found in review 26 for counters (plain), fixed, severity low: `ZADD _names now` (no GT) lets a Worker
  // whose clock lags move a counter's activity back by up to the skew (its lastWriteAt goes back,
  // and it drops below names written after it). Fixed: the shared stamp never lowers (GT).
  it("a stamp only rises: a lagging Worker's write of the newest name leaves it at the top", async () => {
    const { stats, base, at, prefix } = workers(`rises${REGISTRIES.indexOf(reg)}`);
    await reg.touch(stats, "old");
    base.now = T0 + reg.gap;
    await reg.touch(at(CLOCK_SKEW_MS), "h");
    const stamped = Number(await score(reg.key(prefix), "h"));
    expect(stamped).toBe(base.now + CLOCK_SKEW_MS);
    base.now += reg.gap;
    await reg.touch(at(0), "h");
    expect(Number(await score(reg.key(prefix), "h"))).toBeGreaterThanOrEqual(stamped);
    expect((await reg.list(stats, { limit: 10 })).names).toEqual(["h", "old"]);
  });
});

/** Deletes a name from each registry as its own DELETE does. */
const REMOVERS: Record<string, (s: Edgestats, name: string) => Promise<unknown>> = {
  "counters (plain)": (s, n) => s.counter(n).delete(),
  "leaderboards (configure)": (s, n) => s.leaderboard(n).delete(),
  "presence rooms (heartbeat)": (s, n) => s.presence(n).delete(),
};

async function refusal(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a refusal");
}

describe.each(REGISTRIES.filter((r) => r.label in REMOVERS))("review 26: $label, pages and cursors", (reg) => {
  const i = REGISTRIES.indexOf(reg);

  it("names of one millisecond (written so by a release before review 26) page by byte order, reversed, each once", async () => {
    const { stats, prefix } = workers(`ties${i}`);
    const names = ["a", "B", "b", "a.b", "a-b", "a_b", "zz", "Z9"];
    for (const name of names) await reg.touch(stats, name);
    // every write since review 26 stamps above the highest: equal stamps are older data
    await command(target, "ZADD", reg.key(prefix), ...names.flatMap((n) => [T0, n]));
    const seen = await pass(reg.list, stats, 3);
    const bytes = (x: string) => Buffer.from(x);
    expect(seen).toEqual([...names].sort((x, y) => Buffer.compare(bytes(y), bytes(x))));
  });

  it("writes in one millisecond stamp one above another: listed newest first", async () => {
    const { stats, prefix } = workers(`onems${i}`);
    const names = ["b", "a", "c"];
    for (const name of names) await reg.touch(stats, name);
    expect(await command(target, "ZRANGE", reg.key(prefix), 0, -1, "WITHSCORES")).toEqual(
      names.flatMap((n, k) => [n, String(T0 + k)]),
    );
    expect(await pass(reg.list, stats, 2)).toEqual(["c", "a", "b"]);
  });

  it("names deleted mid-pass (the cursor's own among them): every name present throughout is listed", async () => {
    const { stats, base } = workers(`del${i}`);
    const names = Array.from({ length: 9 }, (_, k) => `d${k}`);
    for (const [k, name] of names.entries()) {
      base.now = T0 + k * 1000;
      await reg.touch(stats, name);
    }
    base.now = T0 + 20_000;
    const gone = ["d8", "d7", "d4", "d1"];
    const seen = await pass(reg.list, stats, 2, async (page) => {
      // after the first page (d8, d7): the cursor's member and the one before it go, and two of
      // later pages, one at a time
      if (page === 0) await Promise.all(gone.slice(0, 3).map((n) => REMOVERS[reg.label]!(stats, n)));
      if (page === 1) await REMOVERS[reg.label]!(stats, "d1");
    });
    for (const name of names.filter((n) => !gone.includes(n))) expect(seen, name).toContain(name);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("a malformed cursor is refused naming `cursor` and writes nothing; offset with a cursor names `offset`", async () => {
    const { stats, prefix } = workers(`bad${i}`);
    await reg.touch(stats, "a");
    await reg.touch(stats, "b");
    const first = await reg.list(stats, { limit: 1 });
    expect(first.nextCursor).not.toBeNull();
    const before = await command(target, "ZRANGE", reg.key(prefix), 0, -1, "WITHSCORES");
    for (const cursor of [
      "x",
      "1:",
      "12:a:11:",
      "5:a:9:9",
      "5:a:9:12",
      ":a",
      "1:-a:2:",
      `${first.nextCursor}:1`,
      "1:a:2:1x",
    ]) {
      const e = await refusal(reg.list(stats, { limit: 1, cursor }));
      expect(e, cursor).toBeInstanceOf(ValidationError);
      expect(JSON.stringify((e as ValidationError).details), cursor).toContain('"cursor"');
    }
    if (reg.list !== roomsList) {
      // the rooms' list has no offset
      const both = await refusal(reg.list(stats, { limit: 1, cursor: first.nextCursor!, offset: 1 }));
      expect(JSON.stringify((both as ValidationError).details)).toContain('"offset"');
    }
    expect(await command(target, "ZRANGE", reg.key(prefix), 0, -1, "WITHSCORES")).toEqual(before);
  });

  it("a cursor of another list (same shape) pages this registry from that position, to an end", async () => {
    const { stats } = workers(`other${i}`);
    const other = REGISTRIES.find((r) => r.list !== reg.list)!;
    for (const name of ["a", "b", "c"]) await reg.touch(stats, name);
    for (const name of ["x", "y"]) await other.touch(stats, name);
    const foreign = (await other.list(stats, { limit: 1 })).nextCursor;
    expect(foreign).not.toBeNull();
    // the foreign cursor (y at T0 + 1, high T0 + 1): this registry's names at or below T0 + 1 after
    // y (b at T0 + 1, a at T0), then those above its high (c at T0 + 2)
    const page = await reg.list(stats, { limit: 10, cursor: foreign! });
    expect(page).toEqual({ names: ["b", "a", "c"], nextCursor: null });
  });
});

describe("review 26: stamps written late (the trim job's hourly refresh, a queued heartbeat)", () => {
  const T_H = Date.UTC(2027, 4, 12, 13); // a whole hour: the trim run of this minute refreshes active rooms' stamps
  const trim = createTrimJob();

  // Found in review 26, fixed, severity medium (the limit src/redis/pages.ts names: "stamped earlier but
  // applied later"): the trim job's hourly refresh stamps each active room with the run's
  // scheduled minute (`ZADD _rooms GT now`), below a stamp a Worker ahead by up to the skew wrote:
  // every room not yet listed by a pass jumps between its cursor and `high`, and that pass never
  // lists them. Same fix: a refresh that moves a stamp lands above the registry's highest.
  it("a pass lists the rooms the hourly trim refresh re-stamps mid-pass", async () => {
    const { stats, base, at, prefix } = workers("trimhour", T_H - 4 * MIN);
    const names = ["n0", "n1", "n2", "n3", "n4", "n5"];
    for (const [k, name] of names.entries()) {
      base.now = T_H - 4 * MIN + k * 1000;
      await stats.presence(name).heartbeat("u");
    }
    base.now = T_H - 30_000;
    await at(CLOCK_SKEW_MS).presence("ahead").heartbeat("u");
    const seen = await pass(roomsList, stats, 2, async (page) => {
      if (page === 0) {
        await trim({ ...lib.ctx(T_H), prefix }, lib.config);
        // the run did refresh the rooms not yet listed (before review 26: to T_H, below the pass's high)
        expect(Number(await score(presenceKeys(prefix).rooms, "n0"))).toBeGreaterThanOrEqual(T_H);
      }
    });
    for (const name of [...names, "ahead"]) expect(seen, name).toContain(name);
  });

  // Found in review 26, fixed, severity medium: a heartbeat accepted queued and applied later carries its
  // own time; a room it makes active again is stamped with that time, which may be far below a
  // pass's `high` (written since by any Worker): missed by the pass. Same fix.
  it("a pass lists a room a late-applied heartbeat (its time minutes back) makes active again", async () => {
    const { stats, base, at } = workers("queuedhb");
    for (const [k, name] of ["r0", "r1", "r2", "r3"].entries()) {
      base.now = T0 + k * 1000;
      await stats.presence(name).heartbeat("u");
    }
    base.now = T0 + 20 * MIN;
    await stats.presence("mid").heartbeat("u");
    base.now = T0 + 30 * MIN;
    await stats.presence("new").heartbeat("u");
    const seen = await pass(roomsList, stats, 2, async (page) => {
      // after the first page (new, mid): applied now, accepted 5 minutes ago (r0 idle past its timeout then), between mid and new
      if (page === 0)
        await at(-5 * MIN)
          .presence("r0")
          .heartbeat("u");
    });
    for (const name of ["new", "mid", "r3", "r2", "r1", "r0"]) expect(seen, name).toContain(name);
  });
});

describe("review 26: a counter's union (rollup) re-stamps its destination", () => {
  // Found in review 26, fixed, severity medium: the union's register (src/counters/union.ts: `ZADD
  // _names now`) has the same flaw as the increment's. Same fix.
  it("a pass lists a destination a lagging Worker's union re-stamps mid-pass", async () => {
    const { stats, base, at } = workers("union");
    const names = ["n0", "n1", "n2", "n3"];
    for (const [k, name] of names.entries()) {
      base.now = T0 + k * 1000;
      await stats.counter(name).incr({ member: "m" });
    }
    base.now = T0 + 10_000;
    await at(CLOCK_SKEW_MS).counter("ahead").incr({ member: "m" });
    const seen = await pass(countersList, stats, 2, async (page) => {
      if (page === 0)
        await at(0)
          .counter("n0")
          .union({ sources: ["n1", "n2"] });
    });
    for (const name of [...names, "ahead"]) expect(seen, name).toContain(name);
  });
});

describe("review 26: stamps that run ahead of the clock", () => {
  // Several names stamped in one millisecond take the ms after the highest each: their scores run
  // ahead of the clock (by 4 ms here). The list keeps their order, and an item's lastWriteAt is its
  // score but never later than the read's time: no write happened in the future.
  it("names written in one millisecond list newest first; lastWriteAt is never after the read's now", async () => {
    const { stats, base, prefix } = workers("ahead-clock");
    base.now = T0;
    for (const name of ["a", "b", "c", "d", "e"]) await stats.counter(name).incr({ member: "m" });
    for (const [k, name] of ["a", "b", "c", "d", "e"].entries())
      expect(Number(await score(counterKeys.names(prefix), name)), name).toBe(T0 + k);
    const page = await stats.counters({ limit: 10 });
    expect(page.counters).toEqual(["e", "d", "c", "b", "a"]);
    expect(page.items.map((i) => i.lastWriteAt)).toEqual([T0, T0, T0, T0, T0]);
    base.now = T0 + 2;
    expect((await stats.counters({ limit: 10 })).items.map((i) => i.lastWriteAt)).toEqual([
      T0 + 2,
      T0 + 2,
      T0 + 2,
      T0 + 1,
      T0,
    ]);
  });
});
