import { defineLua } from "../redis/script.ts";

/**
 * The site-wide online figure (`GET /v1/presence/_total`), kept by the trim job (trim-script.ts)
 * and by the room delete (scripts.ts). `_online` (registryKeys: `counted`) holds each room's online
 * count at the job's latest visit of it, for rooms with someone online only, and their sum in
 * field SUM_FIELD, written in the same script as the counts, so the sum is always the hash's: a run
 * capped before every room is visited samples the visited rooms' fresh counts and the others' last
 * ones, never a room twice. A room counting 0 (gone idle) leaves the hash at that visit; a deleted
 * room leaves it at its delete; with nobody counted the hash goes.
 */
export const siteLua = defineLua(
  "presence.site",
  ["SUM_FIELD", "recordSample"],
  `
-- No room name starts with '_' (NAME_PATTERN), so the sum's field is never a room's.
local SUM_FIELD = '_sum'
-- Records online as the day's latest site-wide sample, taken ofDay ms after 00:00 UTC, and raises
-- the day's highest to peak; the day's first sample gives the key its deadline.
local function recordSample(site, online, peak, ofDay, dailyTtl)
  local s = redis.call('BITFIELD', site, 'GET', 'u32', 0, 'GET', 'u32', 96, 'SET', 'u32', 64, online, 'SET', 'u32', 96, ofDay + 1)
  if peak > s[1] then redis.call('BITFIELD', site, 'SET', 'u32', 0, peak, 'SET', 'u32', 32, ofDay) end
  if s[2] == 0 then redis.call('EXPIRE', site, dailyTtl) end
end
`,
);
