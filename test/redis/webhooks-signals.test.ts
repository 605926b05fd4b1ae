/**
 * The events other features detect, end to end with a fake clock and a real receiver:
 * leaderboard.leader (at score-write time, queued by the score script itself) and
 * trending.rising (the minute webhooks job).
 */
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { registryKeys } from "../../src/webhooks/keys.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("webhooks-signals");
/** 2026-11-22 12:30 UTC. */
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const SECRET = "s3cret-s3cret-s3cret";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true };
const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true" });

const receiver = receiverForTests();

interface Event {
  id: string;
  type: string;
  at: number;
  data: Record<string, unknown>;
}

/** Delivers what is due and returns the events of `type` the receiver got for this call. */
async function deliver(ctx: Ctx, type: string): Promise<Event[]> {
  const start = receiver.received.length;
  await webhooks.deliverDue(ctx, direct);
  return receiver.received
    .slice(start)
    .map((r) => JSON.parse(r.body) as Event)
    .filter((e) => e.type === type);
}

const pending = (ctx: Ctx) => command(lib.target, "ZCARD", registryKeys(ctx.prefix).pending);

describe("leaderboard.leader", () => {
  const subscribe = (ctx: Ctx, board: string) =>
    webhooks.put(
      ctx,
      "leader",
      { url: `${receiver.url}/hook`, events: ["leaderboard.leader"], filter: { board }, secret: SECRET },
      direct,
    );

  it("fires once per change of #1; the leader scoring again, a tie and a lower player fire nothing", async () => {
    const ctx = lib.ctx(T0, "leader");
    await subscribe(ctx, "b");
    await leaderboards.join(ctx, "b", "ann", { name: "Ann" });
    await leaderboards.join(ctx, "b", "bob", { name: "Bob" });
    await leaderboards.changeScore(ctx, "b", "ann", { by: 5 });
    let got = await deliver(ctx, "leaderboard.leader");
    expect(got).toEqual([
      {
        id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
        type: "leaderboard.leader",
        at: T0,
        data: { board: "b", player: "ann", score: 5, previous: null, season: null },
      },
    ]);

    // the same leader again, a player below, a tie (ties "joined": ann joined first and stays #1)
    await leaderboards.changeScore(ctx, "b", "ann", { by: 1 });
    await leaderboards.changeScore(ctx, "b", "bob", { set: 3 });
    await leaderboards.changeScore(ctx, "b", "bob", { set: 6 });
    expect(await pending(ctx)).toBe(0);
    expect(await deliver(ctx, "leaderboard.leader")).toEqual([]);

    // bob overtakes: one event naming the previous leader; the score stays exact
    await leaderboards.changeScore(ctx, "b", "bob", { by: 1e12 });
    got = await deliver(ctx, "leaderboard.leader");
    expect(got.map((e) => e.data)).toEqual([
      { board: "b", player: "bob", score: 1e12 + 6, previous: "ann", season: null },
    ]);
    await leaderboards.changeScore(ctx, "b", "bob", { by: 1 });
    expect(await pending(ctx)).toBe(0);
  });

  it("a batch reports the #1 after the whole batch once; a leader who drops hands the lead to the next", async () => {
    const ctx = lib.ctx(T0, "leader-batch");
    await subscribe(ctx, "b");
    for (const p of ["a", "b", "c"]) await leaderboards.join(ctx, "b", p, { name: p });
    await leaderboards.changeScores(ctx, "b", [
      { player: "a", by: 10 },
      { player: "b", by: 20 },
      { player: "c", by: 15 },
    ]);
    expect((await deliver(ctx, "leaderboard.leader")).map((e) => e.data)).toEqual([
      { board: "b", player: "b", score: 20, previous: null, season: null },
    ]);
    // the leader's own write moves it down: the new #1 (c) did not write, and is reported
    await leaderboards.changeScore(ctx, "b", "b", { set: 1 });
    expect((await deliver(ctx, "leaderboard.leader")).map((e) => e.data)).toEqual([
      { board: "b", player: "c", score: 15, previous: "b", season: null },
    ]);
    // a batch where the lead changes hands twice tells only the end state
    await leaderboards.changeScores(ctx, "b", [
      { player: "a", by: 100 },
      { player: "b", by: 200 },
    ]);
    expect((await deliver(ctx, "leaderboard.leader")).map((e) => e.data)).toEqual([
      { board: "b", player: "b", score: 201, previous: "c", season: null },
    ]);
  });

  it("a lead regained at the same score is a new event (each change has its own id)", async () => {
    const ctx = lib.ctx(T0, "leader-again");
    await subscribe(ctx, "b");
    await leaderboards.join(ctx, "b", "a", { name: "a" });
    await leaderboards.join(ctx, "b", "b", { name: "b" });
    await leaderboards.changeScore(ctx, "b", "a", { set: 100 });
    await leaderboards.changeScore(ctx, "b", "b", { set: 150 });
    await leaderboards.changeScore(ctx, "b", "b", { set: 50 });
    await leaderboards.changeScore(ctx, "b", "b", { set: 150 });
    const got = await deliver(ctx, "leaderboard.leader");
    // delivered in one run, in no particular order
    expect(got.map((e) => `${String(e.data.player)}<${String(e.data.previous)}`).sort()).toEqual([
      "a<b",
      "a<null",
      "b<a",
      "b<a",
    ]);
    expect(new Set(got.map((e) => e.id)).size).toBe(4);
  });

  it("ties 'reached': equalling the leader's score does not take the lead", async () => {
    const ctx = lib.ctx(T0, "leader-reached");
    await subscribe(ctx, "r");
    await leaderboards.configure(ctx, "r", { ties: "reached" });
    await leaderboards.join(ctx, "r", "a", { name: "a" });
    await leaderboards.join(ctx, "r", "b", { name: "b" });
    await leaderboards.changeScore(ctx, "r", "a", { by: 5 });
    await leaderboards.changeScore(ctx, "r", "b", { by: 5 });
    expect((await deliver(ctx, "leaderboard.leader")).map((e) => e.data.player)).toEqual(["a"]);
  });

  it("is per live season: the first #1 of a new season fires (previous null), with the season in data and id", async () => {
    const ctx = lib.ctx(T0, "leader-season");
    await subscribe(ctx, "d");
    await leaderboards.configure(ctx, "d", { reset: "daily" });
    await leaderboards.join(ctx, "d", "a", { name: "a" });
    await leaderboards.changeScore(ctx, "d", "a", { by: 5 });
    const day1 = await deliver(ctx, "leaderboard.leader");
    expect(day1.map((e) => e.data)).toEqual([
      { board: "d", player: "a", score: 5, previous: null, season: "2026-11-22" },
    ]);
    const next = { ...ctx, now: T0 + 24 * HOUR };
    await leaderboards.changeScore(next, "d", "a", { by: 5 });
    const day2 = await deliver(next, "leaderboard.leader");
    expect(day2.map((e) => e.data)).toEqual([
      { board: "d", player: "a", score: 5, previous: null, season: "2026-11-23" },
    ]);
    expect(day2[0]!.id).not.toBe(day1[0]!.id);
    await leaderboards.changeScore(next, "d", "a", { by: 5 });
    expect(await pending(next)).toBe(0);
  });

  it("the leader's removal is forgotten: the next #1 to write is reported with previous null", async () => {
    const ctx = lib.ctx(T0, "leader-remove");
    await subscribe(ctx, "b");
    await leaderboards.join(ctx, "b", "a", { name: "a" });
    await leaderboards.join(ctx, "b", "b", { name: "b" });
    await leaderboards.changeScore(ctx, "b", "a", { by: 10 });
    await leaderboards.changeScore(ctx, "b", "b", { by: 5 });
    await deliver(ctx, "leaderboard.leader");
    await leaderboards.removePlayer(ctx, "b", "a");
    await leaderboards.changeScore(ctx, "b", "b", { by: 1 });
    expect((await deliver(ctx, "leaderboard.leader")).map((e) => e.data)).toEqual([
      { board: "b", player: "b", score: 6, previous: null, season: null },
    ]);
    // the board's last player leaves: nothing of the board is left behind by the leader mark
    await leaderboards.removePlayer(ctx, "b", "b");
    expect(await leaderboards.list(ctx)).toMatchObject({ boards: [] });
  });

  it("boards nobody subscribes to queue nothing", async () => {
    const ctx = lib.ctx(T0, "leader-other");
    await subscribe(ctx, "watched");
    await leaderboards.join(ctx, "other", "a", { name: "a" });
    await leaderboards.changeScore(ctx, "other", "a", { by: 1 });
    expect(await pending(ctx)).toBe(0);
  });
});

describe("trending.rising", () => {
  const retention = { retentionHours: config.trendingRetentionHours };
  const H = Math.floor(T0 / HOUR) * HOUR;

  /** `x` 2 a hour for a day, then 60 in the first half of this hour; `y` steady at 2 an hour (not rising). */
  async function recordDay(ctx: Ctx, stream: string) {
    for (let h = 1; h <= 24; h++) {
      const at = H - h * HOUR;
      await trending.record(
        ctx,
        stream,
        [
          { member: "x", count: 2, at },
          { member: "y", count: 2, at },
        ],
        retention,
      );
    }
    await trending.record(
      ctx,
      stream,
      [
        { member: "x", count: 60 },
        { member: "y", count: 1 },
      ],
      retention,
    );
  }

  it("fires once per member and hour above the threshold, only to webhooks whose threshold it reaches", async () => {
    const ctx = lib.ctx(T0, "rising");
    await recordDay(ctx, "s");
    const hook = { url: `${receiver.url}/hook`, events: ["trending.rising" as const], secret: SECRET };
    await webhooks.put(ctx, "low", { ...hook, filter: { stream: "s" } }, direct);
    await webhooks.put(ctx, "picky", { ...hook, threshold: 1000 }, direct);
    await webhooks.put(ctx, "elsewhere", { ...hook, filter: { stream: "other" } }, direct);

    const start = receiver.received.length;
    const run = await webhooks.webhooksJob(ctx, config);
    expect(run).toMatchObject({ risingStreams: 2, risingEvents: 1, risingQueued: 1, risingMore: false, delivered: 1 });
    const got = receiver.received.slice(start).map((r) => JSON.parse(r.body) as Event);
    expect(got).toHaveLength(1);
    const data = got[0]!.data;
    // x: 60 against a baseline of 2 an hour × half an hour elapsed = 1
    expect(data).toEqual({
      stream: "s",
      hour: H,
      member: "x",
      count: 60,
      baseline: 1,
      ratio: 60,
      score: 59 / Math.sqrt(2),
    });
    const rising = await trending.rising(ctx, "s", { ...retention, baselineHours: 24 });
    expect(rising.items[0]).toMatchObject({ member: "x", score: data.score });

    // later runs of the same hour see x again and send nothing
    const later = { ...ctx, now: T0 + 10 * MINUTE };
    await trending.record(later, "s", [{ member: "x", count: 10 }], retention);
    expect(await webhooks.webhooksJob(later, config)).toMatchObject({
      risingEvents: 1,
      risingQueued: 0,
      risingRepeated: 1,
      delivered: 0,
    });
    // x climbs past the picky webhook's threshold: the same event, now for it alone
    const climbed = { ...ctx, now: T0 + 20 * MINUTE };
    await trending.record(climbed, "s", [{ member: "x", count: 3000 }], retention);
    const before = receiver.received.length;
    expect(await webhooks.webhooksJob(climbed, config)).toMatchObject({ risingQueued: 1, delivered: 1 });
    const toPicky = receiver.received.slice(before).map((r) => JSON.parse(r.body) as Event);
    expect(toPicky.map((e) => e.id)).toEqual([got[0]!.id]);

    // the next hour, still rising: a new event
    const nextHour = { ...ctx, now: H + HOUR + 30 * MINUTE };
    await trending.record(nextHour, "s", [{ member: "x", count: 200 }], retention);
    const again = await webhooks.webhooksJob(nextHour, config);
    expect(again).toMatchObject({ risingEvents: 1, risingQueued: 1, delivered: 1 });
    const last = JSON.parse(receiver.received.at(-1)!.body) as Event;
    expect(last.data).toMatchObject({ stream: "s", member: "x", hour: H + HOUR });
    expect(last.id).not.toBe(got[0]!.id);
  });

  it("a webhook without a filter watches every stream, a few per run, taking turns", async () => {
    const ctx = lib.ctx(T0, "rising-all");
    const streams = Array.from({ length: webhooks.RISING_STREAMS_PER_RUN + 2 }, (_, i) => `s${i}`);
    for (const s of streams) await trending.record(ctx, s, [{ member: "m", count: 50 }], retention);
    await webhooks.put(
      ctx,
      "all",
      { url: `${receiver.url}/hook`, events: ["trending.rising"], secret: SECRET },
      direct,
    );
    const first = await webhooks.webhooksJob(ctx, config);
    expect(first).toMatchObject({ risingStreams: webhooks.RISING_STREAMS_PER_RUN, risingMore: true });
    let sent = first.risingQueued as number;
    for (let m = 1; m <= 3; m++)
      sent += (await webhooks.webhooksJob({ ...ctx, now: T0 + m * MINUTE }, config)).risingQueued as number;
    // every stream's m once, however often the turns came round
    expect(sent).toBe(streams.length);
  });

  it("costs nothing extra when no webhook subscribes to it", async () => {
    const ctx = lib.ctx(T0, "rising-none");
    await recordDay(ctx, "s");
    await webhooks.put(
      ctx,
      "leader",
      { url: `${receiver.url}/hook`, events: ["leaderboard.leader"], secret: SECRET },
      direct,
    );
    const run = await webhooks.webhooksJob(ctx, config);
    expect(run).not.toHaveProperty("risingStreams");
  });
});
