import type { Job } from "../jobs.ts";
import { asList, runWrite } from "../redis/script.ts";
import { defineWriteScript } from "../redis/script.ts";
import { boardKeys, registryKey, SEQ_WIDTH, snapshotStateKey } from "./keys.ts";
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
 * script budget, several runs): each slice holds the ranks at its own copy time,
 * so a player who moved across a slice boundary while the copy was under way may
 * be missing from the snapshot (previousRank null) or read the later rank.
 */

/** Board names one list script returns (one page of the registry). */
export const SNAPSHOT_PAGE = 200;
/** Boards per step script (4 keys each). */
export const SNAPSHOT_GROUP = 50;
/** Ranking members per ZADD inside a step (Lua's unpack limit is about 8,000 values). */
const ZADD_BATCH = 1000;
/** Seconds a snapshot (and a partial build) lives: a daily pass refreshes it; a board that leaves the registry loses it. */
export const SNAPSHOT_TTL_SECONDS = 3 * 86_400;

/**
 * KEYS: state, registry. ARGV: day, page size. The next page of the registry
 * after the pass's cursor (score, name), oldest activity first; `{done}` when
 * today's pass is complete. An empty page completes the pass.
 */
export const listForSnapshot = defineWriteScript(
  "leaderboards:snap-list",
  `
local state, registry = KEYS[1], KEYS[2]
local day, n          = ARGV[1], tonumber(ARGV[2])
local st = redis.call('HMGET', state, 'day', 'cursor')
if st[1] == day then return {done = true} end
local cs, cname = '-inf', nil
local cday, score, name = string.match(st[2] or '', '^([^|]+)|([^|]+)|(.*)$')
if cday == day then cs, cname = score, name end
local rows = redis.call('ZRANGE', registry, cs, '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, n)
local boards = {}
for i = 1, #rows, 2 do
  -- boards at the cursor's own score sort by name: those up to the cursor are done
  if not (cname and rows[i + 1] == cs and rows[i] <= cname) then boards[#boards + 1] = {rows[i], rows[i + 1]} end
end
if #boards == 0 and #rows == n * 2 then
  -- a full page of boards sharing the cursor's millisecond: step past that score
  rows = redis.call('ZRANGE', registry, '(' .. cs, '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, n)
  for i = 1, #rows, 2 do boards[#boards + 1] = {rows[i], rows[i + 1]} end
end
local last = #rows < n * 2
if #boards == 0 then
  redis.call('HSET', state, 'day', day)
  redis.call('HDEL', state, 'cursor')
end
return {boards = boards, last = last}
`,
);

/**
 * KEYS: state, then per board settings, ranking, snapshot, next. ARGV: day,
 * member budget, ttl, final ('1': these boards end the registry), then per board
 * name and registry score. Copies at most `budget` ranking members over the boards
 * in order, stops at the first board it cannot finish, and moves the pass's cursor
 * past the boards it finished (or that need nothing: seasonal, done today, gone).
 */
export const snapshotStep = defineWriteScript(
  "leaderboards:snap-step",
  `
local state                     = KEYS[1]
local day, budget, ttl, final   = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local n                         = (#KEYS - 1) / 4
local handled, copied, completed = 0, 0, 0
for b = 1, n do
  local settings, ranking, snap, nextKey = KEYS[b * 4 - 2], KEYS[b * 4 - 1], KEYS[b * 4], KEYS[b * 4 + 1]
  local meta  = redis.call('HMGET', settings, 'ties', 'cfg', 'snapDay', 'snapBuild')
  -- a board without settings is gone (writing snapDay would bring its settings back)
  local needs = meta[1] and string.sub(meta[2] or 'n', 1, 1) == 'n' and meta[3] ~= day
  if needs then
    if copied >= budget then break end
    local from = 0
    local bday, bfrom = string.match(meta[4] or '', '^([^|]+)|(%d+)$')
    if bday == day then from = tonumber(bfrom) else redis.call('DEL', nextKey) end
    local take = budget - copied
    local rows = redis.call('ZRANGE', ranking, from, from + take - 1)
    for i = 1, #rows, ${ZADD_BATCH} do
      local args = {}
      for j = i, math.min(i + ${ZADD_BATCH - 1}, #rows) do
        args[#args + 1] = from + j
        args[#args + 1] = string.sub(rows[j], ${SEQ_WIDTH + 2})
      end
      redis.call('ZADD', nextKey, unpack(args))
    end
    copied = copied + #rows
    if #rows == take then
      -- the budget is spent: the next script continues this board at from + take
      redis.call('HSET', settings, 'snapBuild', day .. '|' .. (from + take))
      redis.call('EXPIRE', nextKey, ttl)
      break
    end
    -- the whole ranking is copied: the new snapshot replaces the old one
    if redis.call('EXISTS', nextKey) == 1 then
      redis.call('RENAME', nextKey, snap)
      redis.call('EXPIRE', snap, ttl)
    else
      redis.call('DEL', snap)
    end
    redis.call('HSET', settings, 'snapDay', day)
    redis.call('HDEL', settings, 'snapBuild')
    completed = completed + 1
  end
  handled = b
end
if handled > 0 then
  if final and handled == n then
    redis.call('HSET', state, 'day', day)
    redis.call('HDEL', state, 'cursor')
  else
    redis.call('HSET', state, 'cursor', day .. '|' .. ARGV[4 + handled * 2] .. '|' .. ARGV[3 + handled * 2])
  end
end
return {handled = handled, copied = copied, completed = completed}
`,
);

export interface SnapshotOptions {
  /** Ranking members per script. @default config.leaderboardSnapshotChunk */
  chunk?: number;
  /** Scripts per run. @default config.leaderboardSnapshotScripts */
  maxScripts?: number;
}

/**
 * `leaderboards.snapshot`, from the hourly cron: takes today's snapshot of every
 * board without seasons, once per UTC day. Bounded: at most `maxScripts` scripts
 * per run, each copying at most `chunk` members; what is left (`more: true`) the
 * next run continues where this one stopped. Idempotent and safe to overlap (two
 * runs copy the same slice into the same ranks).
 */
export function createSnapshotJob(options: SnapshotOptions = {}): Job {
  return async (ctx, config) => {
    const chunk = options.chunk ?? config.leaderboardSnapshotChunk;
    const maxScripts = options.maxScripts ?? config.leaderboardSnapshotScripts;
    const day = seasonAt("daily", ctx.now).id;
    const state = snapshotStateKey(ctx.prefix);
    let scripts = 0;
    let copied = 0;
    let completed = 0;
    let boards = 0;
    const result = (more: boolean, extra: Record<string, boolean> = {}) => ({ day, scripts, boards, snapshots: completed, members: copied, more, ...extra });
    while (scripts < maxScripts) {
      scripts++;
      const { value: page } = await runWrite<{ done?: true; boards: [string, string][] | Record<string, never>; last: boolean }>(
        ctx.redis,
        listForSnapshot,
        [state, registryKey(ctx.prefix)],
        [day, SNAPSHOT_PAGE],
      );
      if (page.done) return result(false, { alreadyDone: scripts === 1 });
      let pending = asList(page.boards);
      if (pending.length === 0) return result(false);
      while (pending.length > 0) {
        if (scripts >= maxScripts) return result(true);
        scripts++;
        const group = pending.slice(0, SNAPSHOT_GROUP);
        const final = page.last && pending.length === group.length;
        const keys = group.flatMap(([board]) => {
          const k = boardKeys(ctx.prefix, board);
          return [k.settings, k.ranking, k.snapshot, k.snapshotNext];
        });
        const { value } = await runWrite<{ handled: number; copied: number; completed: number }>(
          ctx.redis,
          snapshotStep,
          [state, ...keys],
          [day, chunk, SNAPSHOT_TTL_SECONDS, final ? 1 : 0, ...group.flat()],
        );
        copied += value.copied;
        completed += value.completed;
        boards += value.handled;
        pending = pending.slice(value.handled);
      }
      if (page.last) return result(false);
    }
    return result(true);
  };
}

export const snapshotJob = createSnapshotJob();
