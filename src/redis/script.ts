import { ConflictError, StorageUnavailableError } from "../errors.ts";
import type { RedisClient } from "./client.ts";

/**
 * Lua scripts: every API call is one script, so it is one HTTP round trip and
 * atomic. Scripts return `cjson.encode(value)`; we parse it here.
 *
 * Write scripts are wrapped in an idempotency prelude: KEYS[1] is the
 * idempotency record (or "" when the request has no Idempotency-Key), ARGV[1]
 * the request fingerprint and ARGV[2] the record's lifetime in seconds. The
 * body sees KEYS/ARGV without those, runs only when no record exists, and its
 * encoded result is stored in the same atomic step, so a key is recorded only
 * when the write happened and a replay returns the first result. A body that
 * refuses the request before writing anything returns a table with
 * `refused = true`; then no record is kept.
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

export function defineReadScript(name: string, body: string): Script {
  // A no-writes flag would let replicas serve it, but read scripts here also
  // refresh cached unions, so they are plain scripts.
  return { name, write: false, text: `${SHEBANG}\n-- edgestats:${name}\n${body.trim()}\n` };
}

export function defineWriteScript(name: string, body: string): Script {
  const text = `${SHEBANG}
-- edgestats:${name}
local idemKey     = KEYS[1]
local fingerprint = ARGV[1]
if idemKey ~= '' then
  local prev = redis.call('GET', idemKey)
  if prev then
    local sep = string.find(prev, '\\n', 1, true)
    if string.sub(prev, 1, sep - 1) ~= fingerprint then return '{"conflict":true}' end
    return '{"replayed":true,"value":' .. string.sub(prev, sep + 1) .. '}'
  end
end
local function body(KEYS, ARGV)
${body.trim()}
end
local keys, argv = {}, {}
for i = 2, #KEYS do keys[i - 1] = KEYS[i] end
for i = 3, #ARGV do argv[i - 2] = ARGV[i] end
local result  = body(keys, argv)
local encoded = cjson.encode(result)
-- A refusal ({refused = true}, decided before anything was written) leaves no
-- record: the retry of a refused request must be judged afresh.
if idemKey ~= '' and not (type(result) == 'table' and result.refused) then
  redis.call('SET', idemKey, fingerprint .. '\\n' .. encoded, 'EX', tonumber(ARGV[2]))
end
return '{"replayed":false,"value":' .. encoded .. '}'
`;
  return { name, write: true, text };
}

const shas = new Map<string, Promise<string>>();

/** SHA-1 of the script text, as Redis computes it for EVALSHA. */
export function scriptSha(script: Script): Promise<string> {
  let sha = shas.get(script.text);
  if (!sha) {
    sha = crypto.subtle.digest("SHA-1", new TextEncoder().encode(script.text)).then((buf) =>
      [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join(""),
    );
    shas.set(script.text, sha);
  }
  return sha;
}

/** The idempotency record of a write, from the `Idempotency-Key` header. */
export interface Idempotency {
  /** Full Redis key of the record. */
  key: string;
  /** Hash of what was asked (method, path, body); a different request with the same key is a 409. */
  fingerprint: string;
  /** @default 86400 */
  ttlSeconds?: number;
}

export type ScriptArg = string | number;

/** Sends EVALSHA, falling back to EVAL when Redis does not know the script yet (NOSCRIPT). */
async function evaluate(redis: RedisClient, script: Script, keys: string[], args: ScriptArg[]): Promise<string> {
  const argv = args.map(String);
  const sha = await scriptSha(script);
  try {
    try {
      return (await redis.evalsha(sha, keys, argv)) as string;
    } catch (error) {
      if (!(error instanceof Error) || !error.message.includes("NOSCRIPT")) throw error;
      return (await redis.eval(script.text, keys, argv)) as string;
    }
  } catch (error) {
    throw toStorageError(error);
  }
}

/** Fetch failures, timeouts and 5xx answers become StorageUnavailableError; script bugs stay errors. */
function toStorageError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const name = error.name;
  const text = error.message;
  // A reply from Redis itself (a script bug, a wrong type) is our fault, not an outage.
  const isRedisReply = name === "UpstashError" && /^(ERR|WRONGTYPE|NOSCRIPT|OOM|EXECABORT)\b/.test(text);
  if (isRedisReply) return error;
  return new StorageUnavailableError(undefined, { cause: error });
}

/** Runs a read script and parses its JSON result. */
export async function runRead<T>(redis: RedisClient, script: Script, keys: string[], args: ScriptArg[] = []): Promise<T> {
  if (script.write) throw new Error(`${script.name} is a write script; use runWrite`);
  return JSON.parse(await evaluate(redis, script, keys, args)) as T;
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
    [idempotency?.fingerprint ?? "", idempotency?.ttlSeconds ?? 86400, ...args],
  );
  const parsed = JSON.parse(raw) as { conflict?: true; replayed: boolean; value: T };
  if (parsed.conflict) {
    throw new ConflictError("idempotency_key_reused", "This Idempotency-Key was already used for a different request; use a new key.");
  }
  return { value: parsed.value, replayed: parsed.replayed };
}

/** cjson encodes an empty Lua table as `{}`; use this where a script returns a list. */
export function asList<T>(value: T[] | Record<string, never> | null | undefined): T[] {
  return Array.isArray(value) ? value : [];
}
