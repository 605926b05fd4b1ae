import { ConflictError } from "../errors.ts";
import { HttpRedis, UpstashError } from "./http.ts";
import type { RedisClient, RedisPipeline } from "./client.ts";
import { DIGESTS_LUA, RECORD_LUA, REPLAY_LUA } from "./idempotency-lua.ts";
import { noteLoaded, noteNoScript } from "./loaded.ts";
import { isNoScript, toStorageError } from "./storage-errors.ts";

/**
 * The script runner under `defineScript` (src/redis/script.ts, which re-exports what other
 * modules need): script texts, EVALSHA with its EVAL fallback, the idempotency prelude and what
 * its replies mean. Nothing outside src/redis uses the builders and runners directly.
 *
 * Lua scripts: every API call is one script, so it is one HTTP round trip and
 * atomic (a read may send plain commands after its script in the same request, on
 * keys no other call knows: `runReadPiped`). Every script is declared with `defineScript` (below): its keys and
 * arguments by name, the body returns a Lua value, which the script encodes
 * with cjson and we parse here.
 *
 * Write scripts are wrapped in an idempotency prelude: KEYS[1] is the
 * idempotency record (or "" when the request has no Idempotency-Key), ARGV[1]
 * the request fingerprint (and, after a space, its canonical JSON digest when it has one:
 * `Idempotency.canonical`) and ARGV[2] the record's lifetime in seconds (the
 * generated header reads the script's own keys and arguments after those). The
 * body runs only when no record exists, and its encoded result is stored in
 * the same atomic step, so a key is recorded only when the write happened and
 * a replay returns the first result. A body that refuses the request before
 * writing anything returns `{refused = '<code>', ...}`; then no record is kept.
 * A write whose result is known before it runs (`resultUpFront`) records it
 * first instead, and takes the record back if the body refuses or fails
 * (writeUpFrontText): one command less per keyed request.
 *
 * A record holds the fingerprint (its first line, as every earlier version wrote and reads it), the
 * canonical digest as a `"c":"<hex>",` field before the result (an earlier version replays it as
 * one more field of its answer, which nothing reads) and the encoded result when that result is at
 * most RECORD_MAX_RESULT_BYTES; a larger one (a 1,000-item batch's per-item
 * results) is stored as a summary instead: its size, its SHA-1 and, for a
 * list, its length. Replaying such a record throws `SummarisedReplay` (the
 * Worker answers 200 with the summary), so no record exceeds about 2.3 KB.
 *
 * Every script starts with `allow-key-locking`: on Upstash it locks only the
 * declared keys, so every key a script touches must be passed in KEYS.
 */
export interface Script {
  readonly name: string;
  readonly text: string;
  readonly write: boolean;
}

const SHEBANG = "#!lua flags=allow-key-locking";

/**
 * The text of a read script: shared Lua, then the body as a function whose value is encoded.
 * A no-writes flag would let replicas serve it, but read scripts here also refresh cached
 * unions, so they are plain scripts.
 */
export function readText(name: string, libraries: readonly string[], body: string): string {
  return [
    SHEBANG,
    `-- edgestats:${name}`,
    ...libraries,
    "local function body()",
    body,
    "end",
    "return cjson.encode(body())",
    "",
  ].join("\n");
}

/**
 * The text of a write script: the idempotency prelude around shared Lua and the body (`header`,
 * which binds the declared names, then `lua`). With `resultUpFront` (see ScriptSpec) the prelude
 * records the result before the body runs: `writeUpFrontText`.
 */
export function writeText(
  name: string,
  libraries: readonly string[],
  header: string,
  lua: string,
  resultUpFront?: string,
): string {
  if (resultUpFront !== undefined) return writeUpFrontText(name, libraries, header, lua, resultUpFront);
  return `${SHEBANG}
-- edgestats:${name}
local idemKey     = KEYS[1]
${DIGESTS_LUA}
if idemKey ~= '' then
  local prev = redis.call('GET', idemKey)
  if prev then
${REPLAY_LUA.replace(/^/gm, "  ")}
  end
end
${libraries.join("\n")}
local function body()
${header}
${lua}
end
${RECORD_LUA}
local result  = body()
local encoded = cjson.encode(result)
-- A refusal ({refused = '<code>'}, decided before anything was written) leaves no
-- record: the retry of a refused request must be judged afresh.
if idemKey ~= '' and not (type(result) == 'table' and result.refused) then
  redis.call('SET', idemKey, fingerprint .. '\\n' .. idemCanonicalField .. recordOf(result, encoded), 'EX', tonumber(ARGV[2]))
end
return '{"replayed":false,"value":' .. encoded .. '}'
`;
}

/**
 * The prelude of a write whose result is known before it runs (`resultUpFront`): one
 * `SET record … NX EX ttl` claims the key with the known result when there is no earlier record,
 * so a keyed write costs one command over the unkeyed one instead of two; only when the key is
 * taken does a `GET` read the earlier record (replay or conflict, as before: a replay costs one
 * command more than the `GET` alone did, and replays are retries, far rarer than first requests). The record must then be taken back wherever the write did
 * not happen as recorded:
 * - a refusal (decided before the first write) `DEL`s it: its retry is judged afresh;
 * - an error in the body (a `redis.call` raising) `DEL`s it and raises the same error object
 *   again (`xpcall` keeps Redis's error table; `pcall` would turn it into a string), so the caller
 *   sees what it sees without the key;
 * - a body whose result is not the declared one (a bug) overwrites the record with what it did
 *   return, so a retry cannot apply the write twice, and fails loudly.
 * The header runs twice (for the known result, and in the body), so the prelude's own locals never
 * shadow, nor are shadowed by, the declared names.
 */
function writeUpFrontText(
  name: string,
  libraries: readonly string[],
  header: string,
  lua: string,
  resultUpFront: string,
): string {
  return `${SHEBANG}
-- edgestats:${name}
local idemKey     = KEYS[1]
${DIGESTS_LUA}
${libraries.join("\n")}
local function body()
${header}
${lua}
end
if idemKey == '' then return '{"replayed":false,"value":' .. cjson.encode(body()) .. '}' end
local function upFront()
${header}
return ${resultUpFront}
end
${RECORD_LUA}
local function same(a, b)
  if type(a) ~= 'table' or type(b) ~= 'table' then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end
local ttl   = tonumber(ARGV[2])
local known = upFront()
-- SET … NX, then GET only when the key is taken (a replay or a conflict): not SET … NX GET, which
-- Redis allows since 7.0 but Upstash's own SDK stopped testing (upstash/redis-js 8953bbb6)
if not redis.call('SET', idemKey, fingerprint .. '\\n' .. idemCanonicalField .. recordOf(known, cjson.encode(known)), 'NX', 'EX', ttl) then
  local prev = redis.call('GET', idemKey)
${REPLAY_LUA}
end
local ok, result = xpcall(body, function(e) return e end)
if not ok then
  redis.call('DEL', idemKey)
  error(result, 0)
end
local encoded = cjson.encode(result)
if type(result) == 'table' and result.refused then
  redis.call('DEL', idemKey)
elseif not same(result, known) then
  redis.call('SET', idemKey, fingerprint .. '\\n' .. idemCanonicalField .. recordOf(result, encoded), 'EX', ttl)
  error({err = 'ERR ${name} returned ' .. encoded .. ', not its resultUpFront ' .. cjson.encode(known)})
end
return '{"replayed":false,"value":' .. encoded .. '}'
`;
}

const shas = new Map<string, string>();

/**
 * SHA-1 of the script text, as Redis computes it for EVALSHA. The hex is kept, not the promise of
 * it: on Workers a request never awaits a promise another request made, which hangs if that one
 * is cancelled first.
 */
export async function scriptSha(script: Script): Promise<string> {
  const known = shas.get(script.text);
  if (known !== undefined) return known;
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(script.text));
  const sha = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  shas.set(script.text, sha);
  return sha;
}

/** The idempotency record of a write, from the `Idempotency-Key` header. */
export interface Idempotency {
  /** Full Redis key of the record. */
  key: string;
  /** Hash of what was asked (method, path, body); a different request with the same key is a 409. */
  fingerprint: string;
  /**
   * SHA-256 of the body (or a library call's arguments) as canonical JSON (sorted keys, no
   * whitespace: src/redis/canonical-json.ts), kept beside `fingerprint`: a request matches a
   * record when either digest does (`SAME_REQUEST_LUA`). Absent for a request with no JSON body.
   */
  canonical?: string | undefined;
  /** @default 86400 */
  ttlSeconds?: number;
}

export type ScriptArg = string | number;

/**
 * What every write of the library returns: its result, and whether it is the stored result of an
 * earlier call with the same idempotency key (nothing was written again).
 */
export type Written<T> = T & { replayed: boolean };

/**
 * The client for one call: the library's own client with one deadline for the call's requests
 * (EVALSHA, and EVAL after its NOSCRIPT), so a call waits at most its timeout (REDIS_TIMEOUT_MS),
 * not that twice. Any other client as it is, with its own timeouts: a library user's, a wrapper of
 * ours (a Proxy: its hooks must run), and the jobs' counting client (src/job-budget.ts), whose
 * requests keep JOB_REDIS_TIMEOUT_MS each.
 */
function oneDeadline(redis: RedisClient): RedisClient {
  return HttpRedis.isOwn(redis) ? (redis.oneDeadline() as unknown as RedisClient) : redis;
}

/** Sends EVALSHA, falling back to EVAL when Redis does not know the script yet (NOSCRIPT). */
async function evaluate(redis: RedisClient, script: Script, keys: string[], args: ScriptArg[]): Promise<string> {
  const argv = args.map(String);
  const sha = await scriptSha(script);
  const client = oneDeadline(redis);
  // what Redis holds is noted (./loaded.ts): the jobs' budget keeps no re-send for a loaded script
  try {
    let reply: string;
    try {
      reply = (await client.evalsha(sha, keys, argv)) as string;
    } catch (error) {
      if (!isNoScript(error instanceof Error ? error.message : undefined)) throw error;
      noteNoScript(redis, sha);
      reply = (await client.eval(script.text, keys, argv)) as string;
    }
    noteLoaded(redis, sha, script);
    return reply;
  } catch (error) {
    throw toStorageError(error);
  }
}

/** Runs a read script and parses its JSON result. */
export async function runRead<T>(
  redis: RedisClient,
  script: Script,
  keys: string[],
  args: ScriptArg[] = [],
): Promise<T> {
  if (script.write) throw new Error(`${script.name} is a write script; use runWrite`);
  return JSON.parse(await evaluate(redis, script, keys, args)) as T;
}

/** Whether the client can send a script and commands after it in one HTTP request (`runReadPiped`). */
export function canPipeline(redis: RedisClient): boolean {
  return typeof redis.pipeline === "function";
}

/**
 * Runs a read script and, in the same HTTP request, the commands `after` adds to the pipeline
 * (Upstash runs them in order, right after the script, but not atomically: other calls may run
 * in between, so they should touch only keys no other call knows, such as a scratch key named for
 * this request). Each is billed as a command. Returns the script's parsed result and the replies
 * of the commands after it; `undefined` when the client has no pipeline (`canPipeline`). A
 * NOSCRIPT answer sends the pipeline again with EVAL, as `evaluate` does; with `once` (commands
 * that do not read what the script writes, such as a counter's INCRBY, which must not count
 * twice) the script is sent again alone and the first send's replies of the others are kept.
 * Both sends share one deadline (`oneDeadline`).
 */
export async function runReadPiped<T>(
  redis: RedisClient,
  script: Script,
  keys: string[],
  args: ScriptArg[],
  after: (pipeline: RedisPipeline) => void,
  once = false,
): Promise<{ value: T; after: unknown[] } | undefined> {
  if (script.write) throw new Error(`${script.name} is a write script; use runWrite`);
  if (!redis.pipeline) return undefined;
  const argv = args.map(String);
  const sha = await scriptSha(script);
  const client = oneDeadline(redis);
  const send = async (text: boolean, withAfter: boolean) => {
    const pipeline = (client.pipeline as () => RedisPipeline)();
    if (text) pipeline.eval(script.text, keys, argv);
    else pipeline.evalsha(sha, keys, argv);
    if (withAfter) after(pipeline);
    return (await pipeline.exec({ keepErrors: true })) as { error?: string; result: unknown }[];
  };
  let replies: { error?: string; result: unknown }[];
  try {
    replies = await send(false, true);
    if (isNoScript(replies[0]?.error)) {
      noteNoScript(redis, sha);
      replies = once ? [...(await send(true, false)), ...replies.slice(1)] : await send(true, true);
    }
    if (replies[0] && !replies[0].error) noteLoaded(redis, sha, script);
  } catch (error) {
    throw toStorageError(error);
  }
  // an error reply from Redis (a script bug, a wrong type) is ours, as from a lone EVALSHA
  const failed = replies.find((r) => r.error);
  if (failed?.error) throw toStorageError(new UpstashError(failed.error));
  return { value: JSON.parse(replies[0]?.result as string) as T, after: replies.slice(1).map((r) => r.result) };
}

/** The prelude's ARGV[1]: the fingerprint, and its canonical digest after a space when it has one (DIGESTS_LUA). */
function digestsOf(idempotency: Idempotency | undefined): string {
  if (!idempotency) return "";
  return idempotency.canonical ? `${idempotency.fingerprint} ${idempotency.canonical}` : idempotency.fingerprint;
}

/** Runs a write script under the idempotency prelude; `replayed` says the result is the stored first one. */
export async function runWrite<T>(
  redis: RedisClient,
  script: Script,
  keys: string[],
  args: ScriptArg[],
  idempotency?: Idempotency,
): Promise<{ value: T; replayed: boolean }> {
  if (!script.write) throw new Error(`${script.name} is a read script; use runRead`);
  const raw = await evaluate(
    redis,
    script,
    [idempotency?.key ?? "", ...keys],
    [digestsOf(idempotency), idempotency?.ttlSeconds ?? 86400, ...args],
  );
  const parsed = JSON.parse(raw) as { conflict?: true; replayed: boolean; value: T; summary?: ReplaySummary };
  if (parsed.conflict) {
    throw new ConflictError(
      "idempotency_key_reused",
      "This Idempotency-Key was already used for a different request; use a new key.",
    );
  }
  if (parsed.summary) throw new SummarisedReplay(parsed.summary);
  return { value: parsed.value, replayed: parsed.replayed };
}

/**
 * What an idempotency record keeps of a result larger than RECORD_MAX_RESULT_BYTES; or, for a
 * request first sent queued (`Prefer: respond-async`, applied by the ingest consumer, which leaves
 * this record), that it was queued and its request id: its first answer was that 202.
 */
export type ReplaySummary =
  | {
      /** Size of the first result as the script encoded it (JSON bytes). */
      bytes: number;
      /** SHA-1 (hex) of that encoded result. */
      sha1: string;
      /** Its length when the result was a list (one entry per batch item), else null. */
      items: number | null;
    }
  | {
      queued: true;
      requestId: string;
      /** When the queued request was accepted (epoch ms); absent from records of earlier versions. */
      acceptedAt?: number;
    };

/**
 * Thrown by `runWrite` for a replay whose first result was too large to keep:
 * the write was applied once (not again now), and only its summary is known.
 * Not an EdgestatsError: it reports success. The Worker answers it with 200,
 * `Idempotent-Replayed: true` and `Idempotent-Summarised: true`.
 */
export class SummarisedReplay extends Error {
  readonly summary: ReplaySummary;
  constructor(summary: ReplaySummary) {
    super(
      "queued" in summary
        ? `Replayed write; it was first sent queued (request ${summary.requestId}, answered 202) and applied from the queue.`
        : `Replayed write; its first result (${summary.bytes} bytes) was too large to keep, only its summary was.`,
    );
    this.name = "SummarisedReplay";
    this.summary = summary;
  }
}

/** cjson encodes an empty Lua table as `{}`; use this where a script returns a list. */
export function asList<T>(value: T[] | Record<string, never> | null | undefined): T[] {
  return Array.isArray(value) ? value : [];
}
