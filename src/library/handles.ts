/**
 * One handle per feature, bound to a name. Thin: each method validates its
 * arguments' shape, then calls the feature's library function, which
 * validates everything before its one script runs.
 */
import * as counters from "../counters/index.ts";
import { ValidationError } from "../errors.ts";
import * as histograms from "../histograms/index.ts";
import * as presence from "../presence/index.ts";
import type { Written } from "../redis/script.ts";
import { parseWindow } from "../time.ts";
import { invalid, memberProblem } from "../validation.ts";
import * as trending from "../trending/index.ts";
import { checkChoices, checkItems, checkShape, FIELDS, QUERY_OPTIONS as Q } from "./inputs.ts";
import { locateMethods } from "./locate.ts";
import { idempotencyOf, list, windowHours, type Runtime, type WriteOptions } from "./shared.ts";
import type * as Options from "./shared.ts";

export type { Runtime, WriteOptions } from "./shared.ts";
export type { Written };
export { LeaderboardHandle, type PlayerScoreChange } from "./leaderboard-handle.ts";

export interface WindowOptions {
  /** `24h`, `2d`, or whole hours; at most the retention (50 h by default). @default "24h" */
  window?: string | number;
}

export interface TrendingTopOptions extends WindowOptions {
  /** Items to return, 1..100. @default 10 */
  n?: number;
}

export class TrendingHandle {
  readonly #rt: Runtime;
  readonly stream: string;
  constructor(runtime: Runtime, stream: string) {
    this.#rt = runtime;
    this.stream = stream;
  }

  /** Counts events (a member, one event, or up to 1,000): one script, all or nothing. */
  async record(
    events: string | trending.TrendingEventInput | trending.TrendingEventInput[],
    options?: WriteOptions,
  ): Promise<Written<{ accepted: number }>> {
    const ctx = this.#rt.ctx();
    const batch = typeof events === "string" ? [{ member: events }] : list(events);
    checkItems(batch, FIELDS.trendingEvent, "events", Array.isArray(events));
    const idempotency = await idempotencyOf(ctx, `trending.record ${this.stream}`, options, batch);
    const settings = { retentionHours: this.#rt.config.trendingRetentionHours };
    const parsed = trending.parseEventTimes(batch);
    return trending.record(ctx, this.stream, parsed, idempotency ? { ...settings, idempotency } : settings);
  }

  /** The top N over the window's finished hours plus the current hour, with `exact` / `maxError`. */
  async top(options: TrendingTopOptions = {}) {
    checkShape(options, Q["trending.top"]);
    // async: a bad window is a rejected promise, as every other refusal, not a synchronous throw
    const hours = windowHours(options.window);
    return trending.top(this.#rt.ctx(), this.stream, {
      retentionHours: this.#rt.config.trendingRetentionHours,
      ...(options.n === undefined ? {} : { n: options.n }),
      ...(hours === undefined ? {} : { windowHours: hours }),
    });
  }

  /** One member's count and rank over the window. */
  async member(member: string, options: WindowOptions = {}) {
    checkShape(options, Q["trending.member"]);
    const hours = windowHours(options.window);
    return trending.member(this.#rt.ctx(), this.stream, member, {
      retentionHours: this.#rt.config.trendingRetentionHours,
      ...(hours === undefined ? {} : { windowHours: hours }),
    });
  }

  /** The members of the current hour most above their own baseline rate (docs/trending.md, "Rising and history"). */
  async rising(options: Options.RisingOptions = {}) {
    checkShape(options, Q["trending.rising"]);
    const baseline = options.baseline;
    const hours = typeof baseline === "string" ? parseWindow(baseline) : baseline;
    if (hours === null)
      throw new ValidationError("baseline must be 1h..168h or 1d..7d.", [
        { path: "baseline", message: "must be 1h..168h or 1d..7d" },
      ]);
    return trending.rising(this.#rt.ctx(), this.stream, {
      retentionHours: this.#rt.config.trendingRetentionHours,
      ...(options.n === undefined ? {} : { n: options.n }),
      ...(hours === undefined ? {} : { baselineHours: hours }),
    });
  }

  /** One member's count in each of the last `hours` finished hours and the current one, with each hour's maxError. */
  async history(member: string, options: Options.TrendingHistoryOptions = {}) {
    checkShape(options, Q["trending.history"]);
    return trending.history(this.#rt.ctx(), this.stream, member, {
      retentionHours: this.#rt.config.trendingRetentionHours,
      ...(options.hours === undefined ? {} : { hours: options.hours }),
    });
  }

  /** Deletes every key of the stream; returns how many existed. */
  async delete(): Promise<number> {
    const { deleted } = await trending.deleteStream(this.#rt.ctx(), this.stream, {
      retentionHours: this.#rt.config.trendingRetentionHours,
    });
    return deleted;
  }
}

export type CounterItem = counters.IncrItem;
export type CounterReadOptions = counters.ReadOptions;

export class CounterHandle {
  readonly #rt: Runtime;
  readonly name: string;
  constructor(runtime: Runtime, name: string) {
    this.#rt = runtime;
    this.name = name;
  }

  /**
   * Adds to members: `incr("home")`, `incr("home", 3)`, `incr({ member, by, period, at, ttl })`
   * or a list of up to 1,000 items, all in one script. Returns each new score.
   */
  async incr(items: string | CounterItem | CounterItem[], by?: number, options?: WriteOptions) {
    const ctx = this.#rt.ctx();
    // `by` goes with a member name; an item carries its own (it was dropped silently: +1)
    if (typeof items !== "string" && by !== undefined)
      invalid([{ path: "by", message: "give by inside the item ({ member, by }) when incr takes items" }]);
    const batch =
      typeof items === "string" ? [by === undefined ? { member: items } : { member: items, by }] : list(items);
    checkItems(batch, FIELDS.counterItem, "items", Array.isArray(items));
    const idempotency = await idempotencyOf(ctx, `counter.incr ${this.name}`, options, batch);
    return counters.increment(ctx, this.name, batch, idempotency);
  }

  /** The `n` highest members, rank 1 first (of a period range with `period`, `from`, `to`). */
  async top(options: CounterReadOptions & { n?: number } = {}) {
    checkShape(options, Q["counter.top"]);
    checkChoices(options);
    const { n = 10, ...rest } = options;
    return counters.ranked(this.#rt.ctx(), this.name, "top", n, rest);
  }

  /** The `n` lowest members, rank 1 first. */
  async bottom(options: CounterReadOptions & { n?: number } = {}) {
    checkShape(options, Q["counter.bottom"]);
    checkChoices(options);
    const { n = 10, ...rest } = options;
    return counters.ranked(this.#rt.ctx(), this.name, "bottom", n, rest);
  }

  /** One member's score and ranks; NotFoundError when absent. */
  async member(member: string, options: CounterReadOptions = {}) {
    checkShape(options, Q["counter.member"]);
    checkChoices(options);
    return counters.memberOf(this.#rt.ctx(), this.name, member, options);
  }

  /** Members with scores within `min`..`max` (`(5` exclusive, `-inf`, `+inf`). */
  async range(options: counters.ScoreRangeOptions = {}) {
    checkShape(options, Q["counter.range"]);
    checkChoices(options);
    return counters.scoreRange(this.#rt.ctx(), this.name, options);
  }

  /** Every member (at most 10,000) ordered by its own value or by score. */
  async sorted(options: counters.SortedOptions = {}) {
    checkShape(options, Q["counter.sorted"]);
    checkChoices(options);
    return counters.sorted(this.#rt.ctx(), this.name, options);
  }

  /** Stores the union of other counters (or their period buckets) under this name. */
  async union(options: counters.UnionOptions, write?: WriteOptions) {
    const ctx = this.#rt.ctx();
    checkShape(options, FIELDS.union);
    checkChoices(options);
    if (Array.isArray(options.sources)) checkItems(options.sources, FIELDS.unionSource, "sources", true, "string");
    const idempotency = await idempotencyOf(ctx, `counter.union ${this.name}`, write, options);
    return counters.union(ctx, this.name, options, idempotency);
  }

  /** Removes one member (with `period`, from each bucket in range); returns how many keys held it. */
  async remove(member: string, options: counters.PeriodOptions = {}): Promise<number> {
    checkShape(options, Q["counter.remove"]);
    const { removed } = await counters.deleteMember(this.#rt.ctx(), this.name, member, options);
    return removed;
  }

  /** Deletes the counter and all its buckets; true when it existed. */
  async delete(): Promise<boolean> {
    const { existed } = await counters.deleteCounter(this.#rt.ctx(), this.name);
    return existed;
  }
}

export class HistogramHandle {
  readonly #rt: Runtime;
  readonly name: string;
  constructor(runtime: Runtime, name: string) {
    this.#rt = runtime;
    this.name = name;
  }

  /** Creates the histogram or changes its unit / retention (its bucket width is fixed once it holds data). */
  async configure(
    settings: histograms.HistogramSettings,
    options?: WriteOptions,
  ): Promise<Written<histograms.HistogramInfo & { created: boolean }>> {
    const ctx = this.#rt.ctx();
    checkShape(settings, FIELDS.histogramSettings);
    const idempotency = await idempotencyOf(ctx, `histogram.configure ${this.name}`, options, settings);
    return histograms.put(ctx, this.name, settings, idempotency);
  }

  /** Records values (a number, an `{ value, at }`, or a list of up to 1,000) atomically. */
  async observe(
    values: number | histograms.Observation | (number | histograms.Observation)[],
    options?: WriteOptions,
  ): Promise<Written<{ accepted: number }>> {
    const ctx = this.#rt.ctx();
    const given = list(values);
    checkItems(given, FIELDS.observation, "values", Array.isArray(values), "number");
    const batch = given.map((v) => (typeof v === "number" ? { value: v } : v));
    const idempotency = await idempotencyOf(ctx, `histogram.observe ${this.name}`, options, batch);
    return histograms.observe(ctx, this.name, batch, idempotency);
  }

  /** Count, exact min / max / mean, p50 / p90 / p99 and buckets over UTC days `from`..`to`. */
  async read(options: histograms.ReadOptions = {}): Promise<histograms.HistogramSummary> {
    checkShape(options, Q["histogram.read"]);
    return histograms.read(this.#rt.ctx(), this.name, options);
  }

  /** Deletes settings and every stored day. */
  async delete(): Promise<{ deleted: boolean }> {
    return histograms.remove(this.#rt.ctx(), this.name);
  }
}

export class PresenceHandle {
  readonly #rt: Runtime;
  readonly room: string;
  constructor(runtime: Runtime, room: string) {
    this.#rt = runtime;
    this.room = room;
  }

  get #timeout() {
    return { timeoutSeconds: this.#rt.config.presenceTimeoutSeconds };
  }

  /** Marks ids (one or up to 1,000) online now; returns the room's online count. */
  async heartbeat(ids: string | string[], options?: WriteOptions): Promise<Written<presence.HeartbeatResult>> {
    // one id (anything but a list: a non-string too, review 21) is the field `id`, as POST
    // …/heartbeats {id} names it (not `ids.0`)
    if (!Array.isArray(ids)) {
      const problem = typeof ids === "string" ? memberProblem(ids) : "must be a string";
      if (problem) invalid([{ path: "id", message: problem }]);
    }
    const ctx = this.#rt.ctx();
    const batch = list(ids);
    const idempotency = await idempotencyOf(ctx, `presence.heartbeat ${this.room}`, options, batch);
    return presence.heartbeat(ctx, this.room, batch, idempotency ? { ...this.#timeout, idempotency } : this.#timeout);
  }

  /** Takes an id offline at once; true when it was online. */
  async leave(id: string): Promise<boolean> {
    // with the handle's timeout, as the heartbeat and the reads: the leave moves last-seen a timeout
    // back, and the default's 300 s left an id online under a longer one (review 16)
    return (await presence.leave(this.#rt.ctx(), this.room, id, this.#timeout)).left;
  }

  /** Ids online now (exact at this moment). */
  async count(): Promise<number> {
    return (await this.stats()).online;
  }

  /** Online now, with today's peak, active and new ids. */
  async stats(): Promise<presence.RoomStats> {
    return presence.stats(this.#rt.ctx(), this.room, this.#timeout);
  }

  /** A past day's peak, active and new ids (`YYYY-MM-DD`, UTC, today or one of the 400 days before). */
  async day(day: string): Promise<presence.RoomDay> {
    return presence.day(this.#rt.ctx(), this.room, day, this.#timeout);
  }

  /** A page of online ids, least recently seen first; pass `nextCursor` back as `cursor`. */
  async members(options: Options.MembersOptions = {}): Promise<presence.MemberPage> {
    checkShape(options, Q["presence.members"]);
    return presence.members(this.#rt.ctx(), this.room, { ...this.#timeout, ...options });
  }

  /** Per-minute online samples over the last `hours` (1..24), taken by the trim job. */
  async history(options: Options.PresenceHistoryOptions = {}) {
    checkShape(options, Q["presence.history"]);
    return presence.history(this.#rt.ctx(), this.room, options.hours);
  }

  /** Deletes every key of the room. */
  async delete(): Promise<boolean> {
    return (await presence.deleteRoom(this.#rt.ctx(), this.room)).existed;
  }
}

// Where each method's input goes in its route (./locate.ts): `[rest, ...path parameters]`.
locateMethods(TrendingHandle, {
  record: ["json", "stream"],
  top: ["query", "stream"],
  member: ["query", "stream", "member"],
  rising: ["query", "stream"],
  // GET …/history?member=: the member is a query parameter there
  history: ["query", "stream"],
  delete: ["query", "stream"],
});
locateMethods(CounterHandle, {
  incr: ["json", "counter"],
  top: ["query", "counter"],
  bottom: ["query", "counter"],
  member: ["query", "counter", "member"],
  range: ["query", "counter"],
  sorted: ["query", "counter"],
  union: ["json", "counter"],
  remove: ["query", "counter", "member"],
  delete: ["query", "counter"],
});
locateMethods(HistogramHandle, {
  configure: ["json", "histogram"],
  observe: ["json", "histogram"],
  read: ["query", "histogram"],
  delete: ["query", "histogram"],
});
locateMethods(PresenceHandle, {
  heartbeat: ["json", "room"],
  leave: ["query", "room", "id"],
  count: ["query", "room"],
  stats: ["query", "room"],
  // GET /v1/presence/{room}?day=
  day: ["query", "room"],
  members: ["query", "room"],
  history: ["query", "room"],
  delete: ["query", "room"],
});
