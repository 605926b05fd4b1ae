/**
 * The Lua of the idempotency prelude that wraps every write script (src/redis/run.ts writeText):
 * how a record is written (`RECORD_LUA`), how a request's digests arrive (`DIGESTS_LUA`) and how a
 * record is matched and replayed (`SAME_REQUEST_LUA`, `REPLAY_LUA`). The ingest apply scripts
 * (src/ingest/scripts.ts) read and leave the same records with `SAME_REQUEST_LUA`.
 */

/**
 * Largest encoded result an idempotency record stores in full (bytes). A record
 * is the 64-character fingerprint, a newline, the canonical digest's field (71 bytes), and either
 * `"value":<result>` or a summary of about 100 bytes, so it never exceeds RECORD_MAX_RESULT_BYTES + 150.
 */
export const RECORD_MAX_RESULT_BYTES = 2048;

/**
 * What a record keeps after the fingerprint, its newline and the canonical digest's field: `"value":<result>`, or for a result
 * over RECORD_MAX_RESULT_BYTES (per-item answers of a big batch, not kept for 24 h) its size,
 * digest and item count, which a replay returns instead.
 */
export const RECORD_LUA = `local function recordOf(result, encoded)
  if #encoded <= ${RECORD_MAX_RESULT_BYTES} then return '"value":' .. encoded end
  local items = (type(result) == 'table' and #result > 0) and #result or cjson.null
  return '"summary":' .. cjson.encode({bytes = #encoded, sha1 = redis.sha1hex(encoded), items = items})
end`;

/**
 * Whether a record `prev` (`<fingerprint>\n["c":"<canonical>",]<result>`) is of the request whose
 * body digests are `fingerprint` (the raw bytes') and `canonical` (its canonical JSON's, '' when
 * unknown): the rest of the record after its first line when it is, else nil. The same request
 * when any digest of one is a digest of the other: both are SHA-256 of a text, so equal digests
 * are equal texts, and a canonical text equal to another text (raw or canonical) is the same JSON.
 * So a record of an earlier version (raw digest only) still matches the same bytes, and a
 * re-serialized retry (other bytes, the same JSON) matches a record that has its canonical digest.
 * Shared with the ingest apply scripts (src/ingest/scripts.ts), which read these records too.
 */
export const SAME_REQUEST_LUA = `local function idemSameRequest(prev, fingerprint, canonical)
  local sep = string.find(prev, '\\n', 1, true)
  if not sep then return nil end
  local was  = string.sub(prev, 1, sep - 1)
  local rest = string.sub(prev, sep + 1)
  local wasCanonical = string.match(rest, '^"c":"(%x+)",')
  if was == fingerprint or wasCanonical == fingerprint then return rest end
  if canonical ~= '' and (was == canonical or wasCanonical == canonical) then return rest end
  return nil
end`;

/**
 * The prelude's fingerprints: ARGV[1] is the raw body's digest, then (since the canonical digest
 * was added) a space and the canonical JSON's digest; `idemCanonicalField` is the record's field
 * for the latter ('' without one). Prefixed names: the libraries and body that follow never
 * shadow them.
 */
export const DIGESTS_LUA = `local fingerprint, idemCanonical = ARGV[1], ''
local idemSpace = string.find(fingerprint, ' ', 1, true)
if idemSpace then
  fingerprint, idemCanonical = string.sub(fingerprint, 1, idemSpace - 1), string.sub(fingerprint, idemSpace + 1)
end
local idemCanonicalField = idemCanonical ~= '' and ('"c":"' .. idemCanonical .. '",') or ''
${SAME_REQUEST_LUA}`;

/** An earlier record `prev`: the same request is replayed, another one is a conflict. */
export const REPLAY_LUA = `  local rest = idemSameRequest(prev, fingerprint, idemCanonical)
  if not rest then return '{"conflict":true}' end
  -- the rest is ['"c":"<canonical>",'] '"value":<result>' or '"summary":{...}' (recordOf)
  return '{"replayed":true,' .. rest .. '}'`;
