import { deferred, leftOf, plannedOf, untilSpent, withNeeds, type Job } from "../jobs.ts";
import { asList } from "../redis/script.ts";
import { DAY, HOUR, MINUTE, SECOND, dayStart } from "../time.ts";
import { dayKeys, dayNumber, daySlotBit, registryKeys, roomKeys, siteDayKeys } from "./keys.ts";
import { DAYS_KEPT } from "./validate.ts";
import { HISTORY_ACTIVE_TTL_SECONDS, HISTORY_IDLE_TTL_SECONDS, dailyTtlSeconds } from "./presence.ts";
import { dueRoomsScript } from "./read-scripts.ts";
import { dropMarksScript, trimScript } from "./trim-script.ts";
import { SITE_ENTRY, UNMAPPED_MARK_KEPT_MS, markOf } from "./scripts.ts";

/** A room's ring of past days lives this long past its last record: every record in it stays for DAYS_KEPT days. */
export const DAYS_TTL_SECONDS = ((DAYS_KEPT + 1) * DAY) / SECOND;

/** Rooms one run visits at most; the longest waiting first (a capped run rotates them). */
export const TRIM_MAX_ROOMS = 2000;
/** Rooms per script call (8 keys each). */
export const TRIM_CHUNK_ROOMS = 50;
/** Ids one script call forgets at most, so no call blocks Redis for long (one unpack each). */
export const TRIM_FORGET_BUDGET = 1000;

/** Subrequests of the smallest trim run: the due list, the marks' script and one chunk of rooms. */
const TRIM_LEAST_SUBREQUESTS = 3;
/**
 * A room stays active this long past its last heartbeat plus the timeout, so
 * the runs after everyone went idle still record a 0 (and clock skew between
 * Workers up to this margin cannot drop a room someone just joined).
 */
export const ACTIVE_MARGIN_MS = 2 * MINUTE;
/** An idle room leaves the room list this long after its last activity: its history and daily keys are gone by then. */
export const LISTED_FOR_MS = 2 * DAY;

export interface TrimOptions {
  /** Rooms one run visits at most. @default 2000 */
  maxRooms?: number;
  /** Rooms per script call (one round trip each). @default 50 */
  chunkRooms?: number;
  /** Ids one script call forgets at most. @default 1000 */
  forgetBudget?: number;
}

/**
 * Every minute: samples each active room's online count into its history and
 * (just after midnight) today's peak; keeps the figures of a day that ended
 * (yesterday's, in the first timeout after midnight, or later in the first hour when those
 * runs missed the room) or of a room going idle
 * in the room's ring of past days; keeps each room's online count for the
 * site-wide figure and records their sum (the last chunk: a capped run's
 * sample holds the rooms it did not visit at their last count); forgets ids idle past the horizon
 * (`PRESENCE_ID_HORIZON_DAYS`); schedules idle rooms for their next visit and
 * drops rooms with nothing left from the registries.
 *
 * Cost: one script listing the due rooms (2 commands when nothing is due),
 * then one script per chunk of rooms (3 commands per active room in a plain
 * minute, 5 at the hour, 4 in the rest of the first hour after midnight; per chunk 1 HMGET of
 * the rooms' last counts, +1 HSET when a count changed, +1 when a room leaves the count; 1 per run
 * for the site-wide sample, 2 when it raises the day's highest; docs/costs.md lists the other states). Idempotent (a rerun of the minute overwrites its own
 * points; forgetting twice forgets nothing) and bounded: `maxRooms` rooms and
 * `forgetBudget` ids per script call; what is left waits for the next run,
 * which is harmless because reads count by time, not by trimming.
 */
export function createTrimJob(options: TrimOptions = {}): Job {
  const maxRooms = options.maxRooms ?? TRIM_MAX_ROOMS;
  const chunkRooms = options.chunkRooms ?? TRIM_CHUNK_ROOMS;
  const forgetBudget = options.forgetBudget ?? TRIM_FORGET_BUDGET;
  const trim: Job = async (ctx, config) => {
    // The run's share of the invocation's subrequests bounds the rooms it lists: the list, the
    // marks' script and one script per chunk. A run listing fewer than are due is `capped`, as at
    // maxRooms: the rooms it did not list keep their place in the due queue for the next run.
    const left = leftOf(ctx);
    if (left < TRIM_LEAST_SUBREQUESTS) return deferred();
    const limit = Math.min(maxRooms, (left - 2) * chunkRooms);
    const timeout = config.presenceTimeoutSeconds * SECOND;
    const horizon = config.presenceIdHorizonDays * DAY;
    const registry = registryKeys(ctx.prefix);
    // two more than the limit: the site entry (SITE_ENTRY, scored 0: first when there) takes no
    // room's place, and one more entry says whether the run leaves any behind (`capped`): at exactly
    // the limit it took itself for capped and rotated every room it visited (review 19)
    const fetched = asList(
      await dueRoomsScript.run<string[] | Record<string, never>>(ctx.redis, registry, {
        now: ctx.now,
        limit: limit + 2,
      }),
    );
    // `_online` holds a count: the run samples it (and checks it against `_due`) with no room due too
    const siteDue = fetched[0] === SITE_ENTRY;
    const due = fetched.filter((entry) => entry !== SITE_ENTRY);
    const listed = due.slice(0, limit);
    // Leave marks of ids never mapped (presence.leave) come due in the same schedule: no command
    // more for the runs; their own script only when some are due (at most maxRooms a run).
    const list = listed.filter((entry) => markOf(entry) === undefined);
    const marks = listed.filter((entry) => markOf(entry) !== undefined);
    let calls = 1;
    // Cut short, as a capped run: Redis lost its scripts twice in the invocation (a re-send each,
    // one unplanned) and the plan (the list's `limit`) no longer pays a step (`plannedOf`), or a
    // step was refused unsent at the invocation's limit (`untilSpent`: it ran nothing). What the
    // run did not reach (marks, rooms) stays due for the next run.
    let short = false;
    const refused = () => {
      short = true;
      return undefined;
    };
    if (marks.length > 0 && plannedOf(ctx) < 1) short = true;
    else if (marks.length > 0) {
      const pairs = marks.map((entry) => markOf(entry) as [string, string]);
      const ran = await untilSpent(async () => {
        await dropMarksScript.run(
          ctx.redis,
          {
            due: registry.due,
            idsKeys: pairs.map(([room]) => roomKeys(ctx.prefix, room).ids),
            seqKeys: pairs.map(([room]) => roomKeys(ctx.prefix, room).seq),
          },
          {
            cut: ctx.now - timeout - UNMAPPED_MARK_KEPT_MS,
            keep: timeout + UNMAPPED_MARK_KEPT_MS,
            entries: [...marks, ...pairs.map(([, id]) => id)],
          },
        );
        return true;
      }, refused);
      if (ran) calls += 1;
    }
    const minute = Math.floor(ctx.now / MINUTE);
    const start = dayStart(ctx.now);
    const capped = due.length > limit;
    let online = 0;
    let siteOnline: number | null = null;
    let forgotten = 0;
    let idle = 0;
    let dropped = 0;
    let stale = 0;
    // with no room listed but the site entry, one chunk of no room: the sample and the check
    for (let i = 0; !short && (i < list.length || (i === 0 && siteDue)); i += chunkRooms) {
      const paid = plannedOf(ctx);
      if (paid < 1) {
        short = true;
        break;
      }
      const chunk = list.slice(i, i + chunkRooms);
      const rooms = chunk.map((room) => ({
        ...roomKeys(ctx.prefix, room),
        daily: dayKeys(ctx.prefix, room, ctx.now).daily,
        yesterday: dayKeys(ctx.prefix, room, ctx.now - DAY).daily,
      }));
      // the last chunk takes the site-wide sample: the list's last, or the last the plan pays
      const last = i + chunkRooms >= list.length || paid < 2;
      const carry = ctx.now - start <= Math.max(timeout, 2 * MINUTE);
      const ran = await untilSpent(
        () =>
          trimScript.run<{
            online: number;
            counted: number;
            forgotten: number;
            idle: number;
            dropped: number;
            stale: number;
          }>(
            ctx.redis,
            {
              due: registry.due,
              rooms: registry.rooms,
              counted: registry.counted,
              site: siteDayKeys(ctx.prefix, ctx.now).total,
              seenKeys: rooms.map((k) => k.seen),
              idsKeys: rooms.map((k) => k.ids),
              namesKeys: rooms.map((k) => k.names),
              seqKeys: rooms.map((k) => k.seq),
              dailyKeys: rooms.map((k) => k.daily),
              historyKeys: rooms.map((k) => k.history),
              yesterdayKeys: rooms.map((k) => k.yesterday),
              daysKeys: rooms.map((k) => k.days),
            },
            {
              now: ctx.now,
              cutoff: ctx.now - timeout,
              idleAfter: timeout + ACTIVE_MARGIN_MS,
              horizonCut: ctx.now - horizon,
              horizon,
              dayStart: start,
              minute,
              slot: minute % (DAY / MINUTE),
              hourly: minute % (HOUR / MINUTE) === 0 ? 1 : 0,
              // After one timeout past midnight every id carried over is offline or
              // has heartbeated (which records the peak): later samples cannot raise it.
              // At least 2 minutes, so that a minute cron has a run in the window even with a
              // timeout under a minute (else yesterday was never recorded; found in review 4).
              carry: carry ? 1 : 0,
              // The rest of the first hour: a room whose ring lacks yesterday, or holds a record older than
              // yesterday's last heartbeat (no idle mark), keeps it then (+1 command a room; review 7: a cron
              // gap over the window lost the day for good; review 11: or kept an earlier session's record),
              // and a room nobody is online in, with no heartbeat today, gets the ids online at 00:00 in
              // today's peak (review 11).
              catchUp: !carry && ctx.now - start < HOUR ? 1 : 0,
              rotate: capped ? 1 : 0,
              dailyTtl: dailyTtlSeconds(ctx.now),
              activeTtl: HISTORY_ACTIVE_TTL_SECONDS,
              idleTtl: HISTORY_IDLE_TTL_SECONDS,
              emptyAfter: LISTED_FOR_MS,
              budget: forgetBudget,
              today: dayNumber(ctx.now),
              todayBit: daySlotBit(dayNumber(ctx.now)),
              yesterdayBit: daySlotBit(dayNumber(ctx.now) - 1),
              daysTtl: DAYS_TTL_SECONDS,
              // the last chunk records the site-wide online count: the sum of every room's last count
              sample: last ? 1 : 0,
              // the ids counted in the rooms visited by the chunks before: with the last chunk's, the
              // run's count at once, which alone raises the day's highest
              visited: online,
              siteDue: siteDue ? 1 : 0,
              roomNames: chunk,
            },
          ),
        refused,
      );
      if (!ran) break;
      const { value } = ran;
      online += value.online;
      if (last) siteOnline = value.counted;
      forgotten += value.forgotten;
      idle += value.idle;
      dropped += value.dropped;
      stale += value.stale;
      calls += 1;
      if (last && i + chunkRooms < list.length) short = true;
    }
    // online: the visited rooms' ids online; siteOnline: the site-wide sample (null: none taken);
    // stale: counted rooms no run visits again (deleted by an earlier release), taken out of it
    return {
      rooms: list.length,
      online,
      siteOnline,
      forgotten,
      idle,
      dropped,
      stale,
      minute: minute * MINUTE,
      calls,
      capped: capped || short,
    };
  };
  // the due list, the marks' script and the trim script
  return withNeeds(trim, { scripts: 3, least: TRIM_LEAST_SUBREQUESTS });
}

export const trimPresenceJob: Job = createTrimJob();

/** Presence's jobs by name (functions/jobs.ts runs `trim` every minute). */
export const jobs: Record<string, Job> = { trim: trimPresenceJob };
