import { deferred, leftOf, plannedOf, untilSpent, withNeeds, type Job } from "../jobs.ts";
import { asList, defineScript } from "../redis/script.ts";
import { boardKeys, registryKey, snapshotStateKey } from "./keys.ts";
import { memberLua } from "./lua.ts";
import { seasonAt } from "./seasons.ts";

/**
 * The daily snapshot of boards without seasons, which gives their reads a
 * `previousRank` ("rank at the last daily snapshot", issue 18 item 4).
 *
 * A snapshot is a sorted set `<p>:lb:<board>:snap` of player → rank (the score
 * is the 1-based rank at copy time, the member the player name, so a read gets
 * the previous rank with one ZSCORE, or one ZMSCORE for a page, whatever the tie
 * policy does to ranking members). It is built in `:snap:next` in slices of
 * `chunk` members per script (ZRANGE by rank, ZADD in groups of 1,000), with the
 * board's progress in its settings (`snapBuild` = `<day>|<next rank>`), and
 * renamed over `:snap` when the whole ranking is copied (`snapDay` = the day).
 * Boards come from the `_boards` registry in activity order, oldest first, with
 * a cursor in `<p>:lb:_snap`, so a board whose activity moves it to the end is
 * still visited in the same pass; a pass ends for the day once the registry is
 * exhausted, and later runs that day cost one script of one command.
 *
 * A board larger than a chunk is copied over several scripts (and, past the run's
 * script budget, several runs, and days: an unfinished build is finished as the snapshot of
 * the day it started before the next day's starts, never restarted): each slice holds the ranks at its own copy time,
 * so a player who moved across a slice boundary while the copy was under way may
 * be missing from the snapshot (previousRank null) or read the later rank.
 */

/** Board names one list script returns (one page of the registry). */
const SNAPSHOT_PAGE = 200;
/** Boards per step script (4 keys each). */
const SNAPSHOT_GROUP = 50;
/** Seconds a snapshot (and a partial build) lives: a daily pass refreshes it; a board that leaves the registry loses it. */
const SNAPSHOT_TTL_SECONDS = 3 * 86_400;

/** Ranking members per ZADD inside a snapshot step (Lua's unpack limit is about 8,000 values). */
const ZADD_BATCH = 1000;

/**
 * The next page (`n` boards) of the registry after the snapshot pass's cursor (score, name),
 * oldest activity first; `{done}` when `day`'s pass is complete. An empty page completes the pass.
 */
export const snapshotListScript = defineScript({
  name: "leaderboards.snapshotList",
  write: true,
  keys: ["state", "registry"],
  args: ["day", "n"],
  lua: `
n = tonumber(n)
-- A page is read one board past its n: whether any board follows says whether the page ends the
-- registry (\`last\`), so a run whose scripts end with a registry of exactly whole pages says so
-- and marks the day done, not \`more\` (review 26). The extra row is dropped.
local function page(rows)
  if #rows <= n * 2 then return rows, true end
  rows[#rows] = nil
  rows[#rows] = nil
  return rows, false
end
local st = redis.call('HMGET', state, 'day', 'cursor')
local cs, cname = '-inf', nil
local cday, score, name = string.match(st[2] or '', '^([^|]+)|([^|]+)|(.*)$')
-- done, also for a late run whose clock is a day behind a pass already done or under way (ISO
-- days compare as strings): it never takes the earlier day's snapshot again (review 8)
if (st[1] and st[1] >= day) or (cday and cday > day) then return {done = true} end
if cday == day then cs, cname = score, name end
local rows, last = page(redis.call('ZRANGE', registry, cs, '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, n + 1))
local boards = {}
for i = 1, #rows, 2 do
  -- boards at the cursor's own score sort by name: those up to the cursor are done
  if not (cname and rows[i + 1] == cs and rows[i] <= cname) then boards[#boards + 1] = {rows[i], rows[i + 1]} end
end
if #boards == 0 and #rows == n * 2 then
  -- A full page of boards sharing the cursor's millisecond, all done: go on right after the
  -- cursor's board, by its rank (stepping past the score skipped every board at it after the
  -- first page: review 8). Past the score only if that board has moved since.
  local at   = cname and redis.call('ZSCORE', registry, cname)
  local rank = at and tonumber(at) == tonumber(cs) and redis.call('ZRANK', registry, cname) or nil
  if rank then
    rows, last = page(redis.call('ZRANGE', registry, rank + 1, rank + n + 1, 'WITHSCORES'))
  else
    rows, last = page(redis.call('ZRANGE', registry, '(' .. cs, '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, n + 1))
  end
  for i = 1, #rows, 2 do boards[#boards + 1] = {rows[i], rows[i + 1]} end
end
if #boards == 0 then
  redis.call('HSET', state, 'day', day)
  redis.call('HDEL', state, 'cursor')
end
return {boards = boards, last = last}
`,
});

/**
 * Board b is `settings[b]`, `rankings[b]`, `snapshots[b]`, `nexts[b]`, named `boards[b]` with
 * registry score `scores[b]`; `final` is '1' when these boards end the registry. Copies at most
 * `budget` ranking members over the boards in order, stops at the first board it cannot finish,
 * and moves the pass's cursor past the boards it finished (or that need nothing: seasonal, done
 * today, gone).
 */
export const snapshotStepScript = defineScript({
  name: "leaderboards.snapshotStep",
  write: true,
  keys: ["state", "...settings", "...rankings", "...snapshots", "...nexts"],
  args: ["day", "budget", "ttl", "final", "...boards", "...scores"],
  lua: `
budget, ttl = tonumber(budget), tonumber(ttl)
local handled, copied, completed = 0, 0, 0
for b = 1, #boards do
  local ranking, snap, nextKey = rankings[b], snapshots[b], nexts[b]
  local meta  = redis.call('HMGET', settings[b], 'ties', 'cfg', 'snapDay', 'snapBuild')
  -- a board without settings is gone (writing snapDay would bring its settings back)
  -- (a board snapshotted, or being built, for a later day than this run's clock: a late run leaves it)
  local bday, bfrom = string.match(meta[4] or '', '^([^|]+)|(%d+)$')
  local needs = meta[1] and string.sub(meta[2] or 'n', 1, 1) == 'n' and (not meta[3] or meta[3] < day)
    and not (bday and bday > day)
  if needs then
    if copied >= budget then break end
    -- a build under way goes on, also one of an earlier day: it finishes as that day's snapshot
    -- before today's starts, so a board needing more steps than a day's runs pay still gets one
    -- (review 13: restarting each new day, it never did)
    local from, build = 0, day
    if bday then from, build = tonumber(bfrom), bday else redis.call('UNLINK', nextKey) end
    local take = budget - copied
    local rows = redis.call('ZRANGE', ranking, from, from + take - 1)
    for i = 1, #rows, ${ZADD_BATCH} do
      local args = {}
      for j = i, math.min(i + ${ZADD_BATCH - 1}, #rows) do
        args[#args + 1] = from + j
        args[#args + 1] = playerOf(rows[j])
      end
      redis.call('ZADD', nextKey, unpack(args))
    end
    copied = copied + #rows
    if #rows == take then
      -- the budget is spent: the next script continues this board at from + take
      redis.call('HSET', settings[b], 'snapBuild', build .. '|' .. (from + take))
      redis.call('EXPIRE', nextKey, ttl)
      break
    end
    -- the whole ranking is copied: the new snapshot replaces the old one
    if redis.call('EXISTS', nextKey) == 1 then
      -- RENAME over yesterday's snapshot would free its members inside this script (151 ms at
      -- 1M players on the bench machine); UNLINK frees them in the background (0.1 ms)
      redis.call('UNLINK', snap)
      redis.call('RENAME', nextKey, snap)
      redis.call('EXPIRE', snap, ttl)
    else
      redis.call('UNLINK', snap)
    end
    redis.call('HSET', settings[b], 'snapDay', build)
    redis.call('HDEL', settings[b], 'snapBuild')
    completed = completed + 1
    -- an earlier day's snapshot: the board still needs today's, from the next script on
    if build ~= day then break end
  end
  handled = b
end
local st   = redis.call('HMGET', state, 'day', 'cursor')
local cday = string.match(st[2] or '', '^([^|]+)|')
-- a pass of a later day done or under way meanwhile (overlapping runs): its state stays, and this
-- run stops (review 8)
local stale = (st[1] and st[1] >= day) or (cday and cday > day)
if stale then return {handled = handled, copied = copied, completed = completed, stale = true} end
if handled > 0 then
  if final == '1' and handled == #boards then
    redis.call('HSET', state, 'day', day)
    redis.call('HDEL', state, 'cursor')
  else
    redis.call('HSET', state, 'cursor', day .. '|' .. scores[handled] .. '|' .. boards[handled])
  end
end
return {handled = handled, copied = copied, completed = completed}
`,
  uses: [memberLua],
});

/**
 * `leaderboards.snapshot`, from the hourly cron: takes today's snapshot of every
 * board without seasons, once per UTC day. Bounded: at most `maxScripts` scripts
 * per run, each copying at most `chunk` members; what is left (`more: true`) the
 * next run continues where this one stopped. Idempotent and safe to overlap (two
 * runs copy the same slice into the same ranks). `chunk` and `maxScripts` come from
 * the config (LEADERBOARD_SNAPSHOT_CHUNK, LEADERBOARD_SNAPSHOT_SCRIPTS).
 */
const snapshotRun: Job = async (ctx, config) => {
  const chunk = config.leaderboardSnapshotChunk;
  // one subrequest a script: the run's share of the invocation's subrequests may stop it sooner
  // than LEADERBOARD_SNAPSHOT_SCRIPTS (`more: true`: the next run goes on from the cursor). The
  // hourly trigger runs this job first (functions/jobs.ts), so that share is all but the later
  // jobs' smallest steps, not their leftovers (review 13)
  const maxScripts = Math.min(config.leaderboardSnapshotScripts, leftOf(ctx));
  if (maxScripts < 2) return deferred();
  const day = seasonAt("daily", ctx.now).id;
  const state = snapshotStateKey(ctx.prefix);
  let scripts = 0;
  let copied = 0;
  let completed = 0;
  let boards = 0;
  const result = (more: boolean, extra: Record<string, boolean> = {}) => ({
    day,
    scripts,
    boards,
    snapshots: completed,
    members: copied,
    more,
    ...extra,
  });
  // Each script is a step of the plan (`maxScripts`): one the plan no longer pays (Redis lost its
  // scripts twice in the invocation) waits for the next run, which goes on from the cursor and the
  // board's `snapBuild`; so does one refused unsent at the limit (`untilSpent`), which copied nothing
  const paid = () => scripts < maxScripts && plannedOf(ctx) >= 1;
  return untilSpent(
    async () => {
      while (paid()) {
        scripts++;
        const { value: page } = await snapshotListScript.run<{
          done?: true;
          boards: [string, string][] | Record<string, never>;
          last: boolean;
        }>(ctx.redis, { state, registry: registryKey(ctx.prefix) }, { day, n: SNAPSHOT_PAGE });
        if (page.done) return result(false, { alreadyDone: scripts === 1 });
        let pending = asList(page.boards);
        if (pending.length === 0) return result(false);
        while (pending.length > 0) {
          if (!paid()) return result(true);
          scripts++;
          const group = pending.slice(0, SNAPSHOT_GROUP);
          const final = page.last && pending.length === group.length;
          const keys = group.map(([board]) => boardKeys(ctx.prefix, board));
          const { value } = await snapshotStepScript.run<{
            handled: number;
            copied: number;
            completed: number;
            stale?: true;
          }>(
            ctx.redis,
            {
              state,
              settings: keys.map((k) => k.settings),
              rankings: keys.map((k) => k.ranking),
              snapshots: keys.map((k) => k.snapshot),
              nexts: keys.map((k) => k.snapshotNext),
            },
            {
              day,
              budget: chunk,
              ttl: SNAPSHOT_TTL_SECONDS,
              final: final ? 1 : 0,
              boards: group.map(([board]) => board),
              scores: group.map(([, score]) => score),
            },
          );
          copied += value.copied;
          completed += value.completed;
          boards += value.handled;
          pending = pending.slice(value.handled);
          if (value.stale) return result(false);
        }
        if (page.last) return result(false);
      }
      return result(true);
    },
    () => {
      // the refused script ran nothing
      scripts--;
      return result(true);
    },
  );
};

// the list and the step script; one of each
const snapshotJob = withNeeds(snapshotRun, { scripts: 2, least: 2 });

/** The leaderboard jobs by name (functions/jobs.ts runs them from cron and POST /internal/jobs/{job}). */
export const jobs: Record<string, Job> = { "leaderboards.snapshot": snapshotJob };
