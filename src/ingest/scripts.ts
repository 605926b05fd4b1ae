/**
 * Scripts of queued ingest: one apply script per kind of write (`ingest.trending`,
 * `ingest.counters`, `ingest.presence`), the consumer's per-minute figures
 * (`ingest.recordBatch`) and their read (`ingest.status`).
 *
 * An apply script wraps the library's own write script (its whole text, idempotency prelude
 * included, run with an empty idempotency key as the synchronous path does without one) in a
 * dedupe step: SMISMEMBER of the group's dedupe ids in today's and yesterday's applied sets; if
 * any was applied already the script writes nothing and says which, and the consumer plans the
 * group again without them; otherwise it runs every library call of the group, then SADDs the ids
 * to today's set (EXPIRE NX: the set lives to the end of tomorrow). Write and record are one
 * atomic script, so a message is recorded exactly when its counts were added, and a redelivery
 * within 24 h of its application (in whatever batch composition) is found: it lands in today's
 * set or yesterday's.
 */
import { incrScript } from "../counters/index.ts";
import { heartbeatScript } from "../presence/index.ts";
import { defineLua, defineScript, SAME_REQUEST_LUA, type LuaLibrary, type Script } from "../redis/script.ts";
import { recordScript } from "../trending/scripts.ts";
import type { IngestKind } from "./message.ts";

/** The library write script each kind of queued write runs (the one its synchronous call sends). */
export const libraryScripts: Record<IngestKind, Script> = {
  trending: recordScript,
  counters: incrScript,
  presence: heartbeatScript,
};

/**
 * The library's write script as a Lua function of its own KEYS and ARGV: its text is generated
 * (the prelude and, for a contract script, the header that binds its names read KEYS/ARGV), so it
 * is embedded whole, as shared Lua whose only inputs are those two parameters. Calling it with a
 * captured call's keys and arguments is the synchronous call, without the round trip.
 */
function libraryWriteOf(kind: IngestKind): LuaLibrary {
  let lua: string | undefined;
  return {
    ...defineLua(`ingest.${kind}Write`, ["libraryWrite"], ""),
    // built on first use, as script texts are (src/redis/script.ts): reading the library script's
    // text here would assemble it at module load, on every cold start
    get lua() {
      // the script minus its shebang line (a comment anywhere but the first line)
      lua ??= `local function libraryWrite(KEYS, ARGV)\n${libraryScripts[kind].text.split("\n").slice(1).join("\n")}\nend`;
      return lua;
    },
  };
}

/**
 * The dedupe step of an apply script, shared with the look-up (`ingest.applied`): which of `ids`
 * (with their `altIds` and synchronous `records`) were applied already, as `dup` (and `asked`, the
 * ids and alt ids asked about, which the apply script records). Reads `today`, `yesterday`,
 * `records`, `nOld`, `ids`, `keyed`, `fingerprints`, `canonicals`, `altIds`, `requestIds`,
 * `acceptedAts`; writes nothing.
 */
const DEDUPE_LUA = `
-- a redelivered message (or a client's retry with the same Idempotency-Key) was recorded today,
-- or yesterday: only the first nOld (accepted before today, or keyed by an Idempotency-Key) can have been.
-- A keyed message is asked about under its id and its canonical JSON's (altIds, in the same
-- command), so a retry that re-serialized the same JSON is found, and a message from either
-- version finds one its id names.
local old = tonumber(nOld)
local asked, askedYesterday, at, atYesterday = {}, {}, {}, {}
for i = 1, #ids do asked[i], at[i] = ids[i], i end
for i = 1, old do askedYesterday[i], atYesterday[i] = ids[i], i end
for j = 1, #keyed do
  if altIds[j] ~= '' then
    local i, n = tonumber(keyed[j]), #asked + 1
    asked[n], at[n] = altIds[j], i
    if i <= old then
      n = #askedYesterday + 1
      askedYesterday[n], atYesterday[n] = altIds[j], i
    end
  end
end
local seen = {}
local found = redis.call('SMISMEMBER', today, unpack(asked))
for p = 1, #found do
  if found[p] == 1 then seen[at[p]] = 1 end
end
if old > 0 then
  found = redis.call('SMISMEMBER', yesterday, unpack(askedYesterday))
  for p = 1, #found do
    if found[p] == 1 then seen[atYesterday[p]] = 1 end
  end
end
-- a keyed request whose record holds this body's fingerprint was applied already: written
-- synchronously first (one ledger for both ways of sending it), or queued by another request with
-- the same key (a retry, whose message may come after the applied sets that hold the first have
-- expired). The parts of one request share its requestId and acceptance time, and are told apart
-- by the sets; a retry may reuse the requestId (a client's X-Request-Id), not the time.
-- The same body: either digest of the message matching either of the record's (idemSameRequest).
for j = 1, #records do
  local prev = redis.call('GET', records[j])
  local rest = prev and idemSameRequest(prev, fingerprints[j], canonicals[j])
  if rest then
    local queued  = string.find(rest, '"queued":true', 1, true)
    local sameId  = string.find(rest, '"requestId":' .. cjson.encode(requestIds[j]), 1, true)
    -- (a record of an earlier version has no acceptedAt: the requestId alone tells)
    local timed   = string.find(rest, '"acceptedAt":', 1, true)
    local sameAt  = string.find(rest, '"acceptedAt":' .. cjson.encode(tonumber(acceptedAts[j])), 1, true)
    if not queued or not sameId or (timed and not sameAt) then seen[tonumber(keyed[j])] = 1 end
  end
end
local dup = {}
for i = 1, #ids do
  if seen[i] == 1 then dup[#dup + 1] = ids[i] end
end
`;

/**
 * The aged-out parts of messages found applied that are not dead-lettered yet: `pendingOf(fields)`
 * maps each of `fields` (dedupe ids and alt ids) found in today's or yesterday's parts hash to its
 * item indexes. A part is recorded there by the apply script that applied its message and deleted
 * once sent (`ingest.markParts`). Reads `partsToday`, `partsYesterday`.
 */
const PENDING_LUA = `
local function pendingOf(fields)
  local pending = {}
  for _, set in ipairs({ partsToday, partsYesterday }) do
    local f = redis.call('HMGET', set, unpack(fields))
    for p = 1, #f do
      if f[p] then pending[fields[p]] = f[p] end
    end
  end
  return pending
end
`;

/**
 * The apply script of one kind. `ids` are the group's dedupe ids, the `nOld` that may have been
 * applied yesterday first; `keyed` the positions in `ids` of those from an Idempotency-Key, with
 * their request's synchronous record key (`records`), body fingerprint, canonical JSON digest and
 * the dedupe id made of it (`canonicals`, `altIds`: '' for a message from a producer before
 * them), request id and acceptance time; the library calls are laid end to end in `callKeys` and `callArgs`,
 * call c taking the next `keyCounts[c]` keys and `argCounts[c]` arguments (its idempotency
 * prelude's slots included, as captured); `parts` the ids (and alt ids) of the messages with
 * items aged out while queued, each followed by those items' indexes in it (`0,3`): recorded with
 * the write in the parts hash, so a redelivery sends exactly that part (see PENDING_LUA).
 * Returns `{applied = #ids}`, or `{duplicates = {id...}, pending}` with nothing written.
 *
 * A read script only in that it has no idempotency prelude of its own (it writes: the consumer's
 * dedupe sets are its idempotency).
 */
function applyScript(kind: IngestKind) {
  return defineScript({
    name: `ingest.${kind}`,
    write: false,
    keys: ["today", "yesterday", "partsToday", "partsYesterday", "...records", "...callKeys"],
    args: [
      "nOld",
      "setTtl",
      "recordTtl",
      "...ids",
      "...keyed",
      "...fingerprints",
      "...canonicals",
      "...altIds",
      "...requestIds",
      "...acceptedAts",
      "...keyCounts",
      "...argCounts",
      "...callArgs",
      "...parts",
    ],
    uses: [libraryWriteOf(kind)],
    lua: `
${SAME_REQUEST_LUA}
${DEDUPE_LUA}
${PENDING_LUA}
-- found applied: the parts their application left out, not sent since (no command without one)
-- (\`parts\` asked whole: an indexes value is no field, as no dedupe id is digits and commas)
if #dup > 0 then return { duplicates = dup, pending = #parts > 0 and pendingOf(parts) or {} } end
local k, a = 0, 0
for c = 1, #keyCounts do
  local nk, na     = tonumber(keyCounts[c]), tonumber(argCounts[c])
  local keys, argv = {}, {}
  for i = 1, nk do keys[i] = callKeys[k + i] end
  for i = 1, na do argv[i] = callArgs[a + i] end
  k, a = k + nk, a + na
  libraryWrite(keys, argv)
end
-- recorded in the same script as the write (under both ids of a keyed message): applied exactly when recorded
redis.call('SADD', today, unpack(asked))
redis.call('EXPIRE', today, setTtl, 'NX')
-- and the synchronous record (unless one is there): a synchronous retry of the request is then a
-- replay, summarised as the 202 it was (src/redis/idempotency-lua.ts recordOf's '"summary":' form)
-- (with the canonical digest's field of src/redis/idempotency-lua.ts when the message has one)
for j = 1, #records do
  local summary = cjson.encode({queued = true, requestId = requestIds[j], acceptedAt = tonumber(acceptedAts[j])})
  local canonical = canonicals[j] ~= '' and ('"c":"' .. canonicals[j] .. '",') or ''
  redis.call('SET', records[j], fingerprints[j] .. '\\n' .. canonical .. '"summary":' .. summary, 'EX', recordTtl, 'NX')
end
-- the parts left out (items aged out while queued), in the same atomic step as the write: a
-- redelivery sends exactly these, not its own split at a later time (review 15)
if #parts > 0 then
  redis.call('HSET', partsToday, unpack(parts))
  redis.call('EXPIRE', partsToday, setTtl, 'NX')
end
return { applied = #ids }
`,
  });
}

export const applyScripts = {
  trending: applyScript("trending"),
  counters: applyScript("counters"),
  presence: applyScript("presence"),
} satisfies Record<IngestKind, Script>;

/**
 * Which of a batch's messages that can no longer apply (their items aged out while queued) were
 * applied already (a redelivery after their script committed): the apply script's dedupe step and
 * nothing else, so a message found is acked as a duplicate and only one not found is dead-lettered;
 * and of those found, the parts their application left out and not sent since (a failed send:
 * sent now; review 15). Returns `{dup = {id...}, pending}`.
 */
export const appliedScript = defineScript({
  name: "ingest.applied",
  write: false,
  keys: ["today", "yesterday", "partsToday", "partsYesterday", "...records"],
  args: [
    "nOld",
    "...ids",
    "...keyed",
    "...fingerprints",
    "...canonicals",
    "...altIds",
    "...requestIds",
    "...acceptedAts",
  ],
  lua: `
${SAME_REQUEST_LUA}
${DEDUPE_LUA}
${PENDING_LUA}
-- (asked about every id of the call: one not found has no part recorded)
return { dup = dup, pending = #dup > 0 and pendingOf(asked) or {} }
`,
});

/**
 * Marks what a batch dead-lettered, after its send: deletes the records of aged-out parts (`ids`:
 * under the dedupe id and its alt id) from today's and yesterday's parts hashes (the day they were
 * applied), so a redelivery finds none and sends nothing more; and adds the ids of messages
 * dead-lettered whole (`dead`: they could no longer apply, met a bound or failed their last
 * delivery) to today's applied set, so a copy in a later batch (a keyed retry, a lost ack) is
 * found and acked, not sent again nor applied (reviews 17, 21).
 * Writes without an idempotency prelude, as the apply scripts do (HDEL and SADD are their own).
 */
export const markPartsScript = defineScript({
  name: "ingest.markParts",
  write: false,
  keys: ["today", "partsToday", "partsYesterday"],
  args: ["setTtl", "...ids", "...dead"],
  lua: `
local n = 0
if #ids > 0 then n = redis.call('HDEL', partsToday, unpack(ids)) + redis.call('HDEL', partsYesterday, unpack(ids)) end
if #dead > 0 then
  redis.call('SADD', today, unpack(dead))
  redis.call('EXPIRE', today, setTtl, 'NX')
end
return n
`,
});

/**
 * Adds a batch's figures to the hour's hash: per-minute fields `<minute>:a|e|r|d|u` (sums of
 * applied, events, retried, deadLettered, duplicates), `<minute>:g` (the largest age seen) and
 * `last` (the latest batch's time).
 */
export const recordBatchScript = defineScript({
  name: "ingest.recordBatch",
  write: true,
  keys: ["stats"],
  args: ["minute", "now", "applied", "events", "retried", "deadLettered", "duplicates", "age", "ttl"],
  lua: `
local sums = { a = applied, e = events, r = retried, d = deadLettered, u = duplicates }
for _, f in ipairs({ 'a', 'e', 'r', 'd', 'u' }) do
  local n = tonumber(sums[f])
  if n > 0 then redis.call('HINCRBY', stats, minute .. ':' .. f, n) end
end
-- the largest age this minute: the lag the status reports
local was = tonumber(redis.call('HGET', stats, minute .. ':g') or '-1')
if tonumber(age) > was then
  redis.call('HSET', stats, minute .. ':g', age, 'last', now)
else
  redis.call('HSET', stats, 'last', now)
end
redis.call('EXPIRE', stats, ttl, 'NX')
return 1
`,
});

/** The hash of this hour and of the previous one, as flat field/value lists. */
export const statusScript = defineScript({
  name: "ingest.status",
  write: false,
  keys: ["thisHour", "previousHour"],
  args: [],
  lua: `return { redis.call('HGETALL', thisHour), redis.call('HGETALL', previousHour) }`,
});
