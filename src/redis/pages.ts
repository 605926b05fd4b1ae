import { invalid } from "../validation.ts";
import { defineLua } from "./script.ts";

/**
 * Cursor pages over a sorted set: resuming after a (score, member) cursor, and the registry lists
 * (counters, histograms, presence rooms, leaderboards) that are read highest activity first while
 * activity rises, with the stamp every write that moves a name's activity goes through.
 */

/** Does `a` sort after `b` in byte order (Lua's < uses the C library's collation)? */
export const afterLua = defineLua(
  "pages.after",
  ["after"],
  `
local function after(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end`,
);

/**
 * Where a page of `key` resumes after the cursor (score, member): right after the member when it
 * is still at that score, else where it would sit among members of equal score (binary search in
 * byte order; a batch shares one time, so equal scores are common). `desc`: the list is read
 * highest score first (ZREVRANGE). An empty `member` resumes before every member of `score`.
 */
export const resumeLua = defineLua(
  "pages.resume",
  ["resume"],
  `
local function resume(key, score, member, desc)
  if member == '' then
    if desc then return redis.call('ZCOUNT', key, '(' .. score, '+inf') end
    return redis.call('ZCOUNT', key, '-inf', '(' .. score)
  end
  local at = redis.call('ZSCORE', key, member)
  if at and tonumber(at) == tonumber(score) then
    return redis.call(desc and 'ZREVRANK' or 'ZRANK', key, member) + 1
  end
  local lo
  if desc then lo = redis.call('ZCOUNT', key, '(' .. score, '+inf') else lo = redis.call('ZCOUNT', key, '-inf', '(' .. score) end
  local hi = lo + redis.call('ZCOUNT', key, score, score)
  while lo < hi do
    local mid  = math.floor((lo + hi) / 2)
    local m    = redis.call(desc and 'ZREVRANGE' or 'ZRANGE', key, mid, mid)[1]
    local past = (desc and after(member, m)) or (not desc and after(m, member))
    if past then hi = mid else lo = mid + 1 end
  end
  return lo
end`,
  [afterLua],
);

/**
 * Stamps the activity of `name` in the registry `key` at `now` (epoch ms, the writer's clock), and
 * above every other name's stamp: a pass (activityPageLua) lists what rose above its `high` at its
 * end, so a stamp must land above any `high` a pass has seen. `now` alone did not, from a Worker
 * whose clock lags the one that wrote the highest (by up to the minute allowed), in that very
 * millisecond, or from a write applied late with its own time (a queued heartbeat, the trim job's
 * hourly refresh at its scheduled minute): between a pass's cursor and `high`, never listed by it
 * (review 25 for the histograms, review 26 for the counters, boards and rooms). So the stamp is
 * `now` or, when another name's is not below it, that + 1; GT: a stamp never goes back (the name
 * at the top keeps its own). Returns 1 when the name is new. Two commands: ZREVRANGE of the
 * highest, ZADD. Stamps run ahead of the clock only while more than one name a millisecond is
 * stamped, for as long as that lasts: callers stamp a name at most once a minute where writes
 * are frequent (counters).
 */
export const stampLua = defineLua(
  "pages.stamp",
  ["stamp"],
  `
local function stamp(key, name, now)
  local top = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
  local at  = tonumber(now)
  if top[1] and top[1] ~= name and tonumber(top[2]) >= at then at = tonumber(top[2]) + 1 end
  return redis.call('ZADD', key, 'GT', string.format('%.0f', at), name)
end`,
);

/**
 * A page of a registry scored by activity (a time that only rises), highest first, in passes that
 * list every member present throughout at least once although activity moves members up while a
 * client pages. Read by position alone, a member not yet listed whose activity is refreshed jumps
 * in front of the cursor and is never listed in that pass (review-contract). So a pass runs in
 * phases: the first lists the members at or below the highest activity its first page saw
 * (`high`); when they are exhausted, the next phase lists, highest first, the members that rose
 * above `high` since (moved or new; its floor `low` is that `high`, its own `high` the highest it
 * saw), and so on until a phase ends with nothing above its `high`. A member that rose after being
 * listed is listed again (at least once, maybe twice). A refresh lands above any earlier phase's
 * `high` because every write that moves a stamp goes through stampLua (above the registry's
 * highest), whatever the writer's clock or how late the write is applied (a heartbeat from the
 * ingest queue, the trim job's hourly refresh stamped with its scheduled minute). Limit: when the
 * name holding the highest stamp leaves (deleted, expired) mid-pass, a later stamp can again land
 * below that pass's `high` if the writer's clock is behind it.
 *
 * `activityPage(key, limit, score, member, high, low)`: `score` '' for the first page; `member`
 * '' resumes before every member of `score` (a phase's start); `low` '' in the first phase.
 * Returns `flat` {member, score, ...} and `next` {score, member, high, low} or false on the last
 * page. Commands: the first page 1; later pages the resume (2 while the cursor's member has not
 * moved) and 1 to read; the last page of each phase 1 more (ZREVRANGEBYSCORE above `high`),
 * which also fills the page from the next phase. At most `limit` + 1 members are read per command.
 */
export const activityPageLua = defineLua(
  "pages.activity",
  ["activityPage"],
  `
local function activityPage(key, limit, score, member, high, low)
  local page, first = nil, score == ''
  if first then
    page = redis.call('ZREVRANGE', key, 0, limit, 'WITHSCORES')
    if #page > 0 then high, low = page[2], '' end
  else
    local start = resume(key, score, member, true)
    page = redis.call('ZREVRANGE', key, start, start + limit, 'WITHSCORES')
  end
  local flat, n = {}, 0
  for i = 1, #page, 2 do
    -- Below the floor: listed by an earlier phase (this one lists what rose above it).
    if low ~= '' and tonumber(page[i + 1]) <= tonumber(low) then break end
    if n == limit then return flat, { flat[#flat], flat[#flat - 1], high, low } end
    flat[#flat + 1], flat[#flat + 2], n = page[i], page[i + 1], n + 1
  end
  -- The first page read from the top in one command: nothing can have risen past it.
  if first then return flat, false end
  -- This phase is over: the members that rose above its high since it began start the next one,
  -- highest first, filling this page (one more than fits says whether the phase goes on).
  local free = limit - n
  local above = redis.call('ZREVRANGEBYSCORE', key, '+inf', '(' .. high, 'WITHSCORES', 'LIMIT', 0, free + 1)
  if #above == 0 then return flat, false end
  local top = above[2]
  for i = 1, math.min(#above, 2 * free), 2 do
    flat[#flat + 1], flat[#flat + 2] = above[i], above[i + 1]
  end
  if #above <= 2 * free then return flat, false end
  if free == 0 then return flat, { top, '', top, high } end
  return flat, { flat[#flat], flat[#flat - 1], top, high }
end`,
  [resumeLua],
);

/** A registry page's cursor: position (score, member), the phase's `high` and floor `low` ('' in the first phase). */
export interface ActivityCursor {
  score: string;
  member: string;
  high: string;
  low: string;
}

/** `<score>:<member>:<high>:<low>`, where `member` and `low` may be empty. */
const ACTIVITY_CURSOR = /^(\d{1,16}):([A-Za-z0-9][A-Za-z0-9_.-]{0,63})?(?::(\d{1,16}):(\d{0,16}))?$/;
/** Longest cursor: three 16-digit scores, a 64-character name and three colons. */
export const ACTIVITY_CURSOR_MAX = 115;

/** The `high` of a cursor of earlier versions: above any time, so its pass has no later phase. */
const NO_LATER_PHASE = "9".repeat(16);

/**
 * A registry list's `cursor`; all '' for the first page. A cursor of earlier versions,
 * `<score>:<member>`, carries no pass start: it pages on to the end as it did (no later phase;
 * relisting everything above it would repeat the pages already read). Anything else, or a cursor
 * whose numbers no page gives (a position above its phase, a floor not below it), is refused.
 */
export function activityCursor(cursor: string | undefined): ActivityCursor {
  if (cursor === undefined || cursor === "") return { score: "", member: "", high: "", low: "" };
  const m = ACTIVITY_CURSOR.exec(cursor);
  const score = m?.[1] ?? "";
  const member = m?.[2] ?? "";
  const high = m?.[3] ?? NO_LATER_PHASE;
  const low = m?.[4] ?? "";
  const old = m?.[3] === undefined;
  if (!m || (old && member === "") || Number(score) > Number(high) || (low !== "" && Number(low) >= Number(high)))
    invalid([{ path: "cursor", message: "not a cursor of this endpoint" }]);
  return { score, member, high, low };
}

/** The script's `next` as a cursor, null on the last page. */
export function nextActivityCursor(next: readonly string[] | false | null | undefined): string | null {
  if (!next || next.length < 3) return null;
  return `${next[0]}:${next[1]}:${next[2]}:${next[3] ?? ""}`;
}
