/**
 * Review 22, leftovers of earlier reviews (real redis-server behind the local Upstash server, the
 * library with an injected clock):
 *
 * 1. Trending's tie order (docs/trending.md: equal counts rank by member, UTF-8 byte order) with
 *    members whose byte order differs from a locale's (upper/lower case, accents, CJK, emoji): top
 *    (every n, so each shorter answer is a prefix of a longer one), the member lookup's rank and
 *    rising, while the previous hour is open (three sets) and after its compaction; and which
 *    members a trim keeps at a tie at its cut.
 * 2. presence.peak after the room is deleted and rebuilt on the same UTC day.
 */
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { HOUR, MINUTE, SECOND } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { bytes, Model } from "../helpers/trending-model.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("review22-leftovers");
// 2026-11-28 15:00 UTC
const H = Math.floor(Date.UTC(2026, 10, 28, 15) / HOUR);
const R = { retentionHours: 50 };
const at =
  (base: Ctx) =>
  (now: number): Ctx => ({ ...base, now });

// byte order differs from any natural-language collation: "B" < "a", "z" < "é" < "ö" < "日" < "😀"
const NAMES = [
  "a",
  "B",
  "b",
  "Z",
  "z",
  "é",
  "e",
  "E",
  "ö",
  "o",
  "ß",
  "ss",
  "日本",
  "日",
  "😀",
  "a b",
  "a-b",
  "ab",
  "A",
  "_x",
];

describe("review 22: trending ties rank by member, byte order, in every state", () => {
  async function seed(stream: string) {
    const base = lib.ctx(H * HOUR + 20 * MINUTE, stream);
    const clock = at(base);
    const model = new Model();
    const write = async (h: number, member: string, count: number) => {
      await trending.record(clock(h * HOUR + 10 * MINUTE), stream, [{ member, count }], R);
      model.add(stream, member, count, h);
    };
    // every member sums to 4 over the window, split differently across U (H-2), P (H-1) and C (H)
    for (let i = 0; i < NAMES.length; i++) {
      const m = NAMES[i] as string;
      const split = [
        [4, 0, 0],
        [0, 4, 0],
        [0, 0, 4],
        [1, 1, 2],
        [2, 2, 0],
      ][i % 5] as number[];
      for (let k = 0; k < 3; k++) if ((split[k] ?? 0) > 0) await write(H - 2 + k, m, split[k] ?? 0);
    }
    // two members above the tie, one below it
    await write(H, "top1", 9);
    await write(H - 1, "top2", 7);
    await write(H - 2, "low", 1);
    // H-2 compacted by the run of H-1 (nothing trimmed: keep ≥ its members); H-1 stays open at H
    await trending.compact(clock((H - 1) * HOUR + 5 * MINUTE), { ...R, keep: 1000 });
    return { clock, model, base };
  }

  async function check(clock: (now: number) => Ctx, stream: string, model: Model, label: string) {
    const ctx = clock(H * HOUR + 30 * MINUTE);
    const want = model.ranked(stream, H, 3);
    const full = await trending.top(ctx, stream, { ...R, n: 100, windowHours: 3 });
    expect(full.exact, label).toBe(true);
    expect(full.items, label).toEqual(want);
    // every n: a prefix of the full ranking (the tie cut at every place)
    for (let n = 1; n <= want.length; n++) {
      const t = await trending.top(ctx, stream, { ...R, n, windowHours: 3 });
      expect(t.items, `${label} n=${n}`).toEqual(want.slice(0, n));
    }
    // a small first page: the tie is settled over several rounds, or by the merge past maxDepth
    for (const n of [3, 7]) {
      const t = await trending.top(ctx, stream, { ...R, n, windowHours: 3, firstDepth: 1, maxDepth: 4 });
      expect(t.exact, `${label} shallow n=${n}`).toBe(true);
      expect(t.items, `${label} shallow n=${n}`).toEqual(want.slice(0, n));
      // no merge allowed: an answer from the candidates says the tie is open (exact false, docs)
      const c = await trending.top(ctx, stream, { ...R, n, windowHours: 3, firstDepth: 1, maxDepth: 4, mergeMax: 1 });
      if (c.items.some((x, i) => x.member !== want[i]?.member))
        expect(c.exact, `${label} candidates n=${n}`).toBe(false);
    }
    // the member lookup: the rank the full ranking gives it
    for (const w of want) {
      const m = await trending.member(ctx, stream, w.member, { ...R, windowHours: 3 });
      expect({ member: m.member, count: m.count, rank: m.rank, rankExact: m.rankExact }, label).toEqual({
        member: w.member,
        count: w.count,
        rank: w.rank,
        rankExact: true,
      });
    }
    return full;
  }

  it("top (every n, shallow pages), member ranks: the model's order before and after the previous hour's compaction", async () => {
    const stream = "ties";
    const { clock, model } = await seed(stream);
    const before = await check(clock, stream, model, "three sets");
    await trending.compact(clock(H * HOUR + 5 * MINUTE), { ...R, keep: 1000 });
    const after = await check(clock, stream, model, "compacted");
    expect(after.items).toEqual(before.items);
    // the tied block is in byte order, which is not a locale's: "B" before "a", "z" before "é"
    const tied = before.items.filter((x) => x.count === 4).map((x) => x.member);
    expect(tied).toEqual([...NAMES].sort(bytes));
    expect(tied.indexOf("B")).toBeLessThan(tied.indexOf("a"));
    expect(tied.indexOf("z")).toBeLessThan(tied.indexOf("é"));
  });

  it("rising: members with equal scores are listed by member, byte order, also when n cuts the tie", async () => {
    const stream = "rise-ties";
    const base = lib.ctx(H * HOUR, stream);
    const clock = at(base);
    // no baseline for anyone; equal counts this hour: equal scores
    for (const m of NAMES) await trending.record(clock(H * HOUR + MINUTE), stream, [{ member: m, count: 3 }], R);
    await trending.record(clock(H * HOUR + MINUTE), stream, [{ member: "hot", count: 5 }], R);
    const sorted = [...NAMES].sort(bytes);
    for (const open of [true, false]) {
      if (!open) await trending.compact(clock(H * HOUR + 5 * MINUTE), { ...R, keep: 1000 });
      const ctx = clock(H * HOUR + 30 * MINUTE);
      for (const n of [1, 4, 13, 21]) {
        const r = await trending.rising(ctx, stream, { ...R, n, baselineHours: 3 });
        expect(
          r.items.map((x) => x.member),
          `n=${n}`,
        ).toEqual(["hot", ...sorted].slice(0, n));
      }
    }
  });

  // low, fixed in review 22 (src/trending/trim-lua.ts): a trim kept the byte-GREATEST members of a
  // tie at its cut (ZREMRANGEBYRANK from the bottom, ZRANGESTORE … REV from the top), while every
  // ranking puts the byte-least first. So an hour whose top was a, b, c (all tied) before compaction
  // named x, y, z after it (maxError 1, exact false): the window's top changed its members though no
  // count had changed. Now the tie's byte-least members stay.
  it.each([
    // [keep, members above the tie, tied members, members under the tie]: the big-hour copy
    // (excess > keep) and the in-place removal (excess ≤ keep), with and without members around
    [5, 0, 26, 0],
    [20, 0, 26, 0],
    [5, 2, 10, 40],
    [20, 3, 30, 4],
    [4, 4, 6, 3],
  ])(
    "keep %i, %i above, a tie of %i, %i under: a trim at a tie keeps the members every ranking puts first",
    async (keep, above, tied, under) => {
      const stream = `trim-tie-${keep}-${above}-${tied}-${under}`;
      const clock = at(lib.ctx((H - 1) * HOUR, stream));
      const name = (p: string, i: number) => `${p}${String(i).padStart(2, "0")}`;
      const events = [
        ...Array.from({ length: above }, (_, i) => ({ member: name("m", i), count: 10 + i })),
        // tied members named so their byte order is not their write order
        ...Array.from({ length: tied }, (_, i) => ({ member: name(i % 2 ? "T" : "t", tied - i), count: 5 })),
        ...Array.from({ length: under }, (_, i) => ({ member: name("u", i), count: 1 + (i % 3) })),
      ];
      await trending.record(clock((H - 1) * HOUR + MINUTE), stream, events, R);
      const read = async (n: number) =>
        trending.top(clock(H * HOUR + 30 * MINUTE), stream, { ...R, n, windowHours: 1 });
      const before = await read(keep);
      await trending.compact(clock(H * HOUR + 5 * MINUTE), { ...R, keep });
      const after = await read(100);
      // the same members and counts, nothing more kept; the cut (the tie's count) is the error
      expect(after.items).toEqual(before.items);
      expect(after.maxError).toBe(5);
      // what a deeper read said before (byte order within the tie) is what stays
      const tiedNames = events
        .filter((e) => e.count === 5)
        .map((e) => e.member)
        .sort(bytes);
      expect(after.items.filter((x) => x.count === 5).map((x) => x.member)).toEqual(tiedNames.slice(0, keep - above));
    },
  );
});

const receiver = receiverForTests();
const TIMEOUT_S = 120;
const T_OPT = { timeoutSeconds: TIMEOUT_S };
const WH_CONFIG = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true", PRESENCE_TIMEOUT_SECONDS: String(TIMEOUT_S) });
const trim = presence.createTrimJob();

describe("review 22: presence.peak when the room is deleted and rebuilt on the same UTC day", () => {
  it("the rebuilt room is told only above the peak the webhook was last told (docs/webhooks.md), with its own figures and a fresh id", async () => {
    const t0 = Date.UTC(2026, 10, 28, 10);
    const base = lib.ctx(t0, "rv22pk");
    const clock = at(base);
    await webhooks.put(
      clock(t0 - HOUR),
      "pk22",
      { url: `${receiver.url}/pk22`, events: ["presence.peak"], filter: { room: "r" }, secret: "s3cret-s3cret-s3cret" },
      { allowLocalHttp: true },
    );
    const start = receiver.received.length;
    const job = async (now: number) => {
      await trim(clock(now), WH_CONFIG);
      return webhooks.webhooksJob(clock(now + SECOND), WH_CONFIG);
    };
    const bodies = () => receiver.received.slice(start).map((r) => JSON.parse(r.body));

    // the first room peaks at 3
    await presence.heartbeat(clock(t0), "r", ["a", "b", "c"], T_OPT);
    expect(await job(t0 + MINUTE)).toMatchObject({ events: 1 });
    // deleted, rebuilt with 2 ids: its own peak is 2, below what the webhook was told today
    await presence.deleteRoom(clock(t0 + 2 * MINUTE), "r");
    await presence.heartbeat(clock(t0 + 3 * MINUTE), "r", ["x", "y"], T_OPT);
    expect(await presence.stats(clock(t0 + 3 * MINUTE + SECOND), "r", T_OPT)).toMatchObject({ peakToday: 2 });
    expect(await job(t0 + 4 * MINUTE)).toMatchObject({ events: 0 });
    // 3 again: not above the told 3
    await presence.heartbeat(clock(t0 + 5 * MINUTE), "r", ["x", "y", "z"], T_OPT);
    expect(await job(t0 + 6 * MINUTE)).toMatchObject({ events: 0 });
    // 4: above; the rebuilt room's figures, previous = the peak last told (the old room's)
    await presence.heartbeat(clock(t0 + 7 * MINUTE), "r", ["x", "y", "z", "w"], T_OPT);
    expect(await job(t0 + 8 * MINUTE)).toMatchObject({ events: 1 });
    const got = bodies();
    expect(got.map((b) => b.data)).toEqual([
      { room: "r", day: "2026-11-28", peak: 3, peakAt: t0, previous: 0 },
      { room: "r", day: "2026-11-28", peak: 4, peakAt: t0 + 7 * MINUTE, previous: 3 },
    ]);
    expect(new Set(got.map((b) => b.id)).size).toBe(2);
    // the event agrees with the room's read
    expect(await presence.stats(clock(t0 + 9 * MINUTE), "r", T_OPT)).toMatchObject({
      peakToday: 4,
      peakAt: t0 + 7 * MINUTE,
    });
  });
});
