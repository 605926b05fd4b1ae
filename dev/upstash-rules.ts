/**
 * What makes the local Upstash server refuse what Upstash refuses: the
 * commands it does not serve, and, inside Lua scripts, those commands plus
 * any key a script did not declare in KEYS (Upstash's `allow-key-locking`
 * locks only declared keys, so such a script would race in production).
 */
import { createHash } from "node:crypto";

/** Commands Upstash does not serve (or that make no sense over REST). */
const REFUSED = new Set([
  "SORT",
  "SORT_RO",
  "WATCH",
  "UNWATCH",
  "MULTI",
  "EXEC",
  "DISCARD",
  "BLPOP",
  "BRPOP",
  "BRPOPLPUSH",
  "BLMOVE",
  "BLMPOP",
  "BZPOPMIN",
  "BZPOPMAX",
  "BZMPOP",
  "WAIT",
  "WAITAOF",
  "SUBSCRIBE",
  "PSUBSCRIBE",
  "SSUBSCRIBE",
  "UNSUBSCRIBE",
  "PUNSUBSCRIBE",
  "SUNSUBSCRIBE",
  "MONITOR",
  "SYNC",
  "PSYNC",
  "REPLICAOF",
  "SLAVEOF",
  "FAILOVER",
  "SHUTDOWN",
  "DEBUG",
  "MIGRATE",
  "SELECT",
  "SWAPDB",
  "CLIENT",
  "CONFIG",
  "ACL",
  "MODULE",
  "BGSAVE",
  "BGREWRITEAOF",
  "SAVE",
  "LASTSAVE",
  "CLUSTER",
  "READONLY",
  "READWRITE",
  "LATENCY",
  "SLOWLOG",
  "MEMORY",
  "OBJECT",
  "RESET",
  "AUTH",
  "HELLO",
  "QUIT",
]);
export const SCRIPT_COMMANDS = new Set(["EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO"]);

/** Upstash's error for a command it does not serve, or null when it serves it. */
export function refusal(name: string): string | null {
  if (REFUSED.has(name) || name.startsWith("TOPK.")) {
    return `ERR Command is not available: '${name.toLowerCase()}'. See https://upstash.com/docs/redis/overall/rediscompatibility for details`;
  }
  return null;
}

/**
 * Lua prelude injected after the shebang: `redis.call`/`pcall` go through a
 * check that every key argument was declared in KEYS and that the command is
 * one Upstash serves. Key positions follow Redis' command table for the
 * commands with several keys or a non-key first argument; any other command is
 * checked on its first argument.
 */
const KEY_GUARD = `local __es_declared = {} for _, k in ipairs(KEYS) do __es_declared[k] = true end
local __es_refused = {SORT=1, SORT_RO=1, BLPOP=1, BRPOP=1, BZPOPMIN=1, BZPOPMAX=1, WATCH=1, KEYS=1, SCAN=1}
local __es_keyless = {PING=1, TIME=1, ECHO=1, INFO=1, DBSIZE=1, RANDOMKEY=1, PUBLISH=1, SPUBLISH=1}
local __es_all = {DEL=1, UNLINK=1, EXISTS=1, MGET=1, TOUCH=1, PFCOUNT=1, PFMERGE=1, SUNION=1, SINTER=1, SDIFF=1, SUNIONSTORE=1, SINTERSTORE=1, SDIFFSTORE=1}
-- source and destination first, options after them (LMOVE's LEFT, COPY's REPLACE, ZRANGESTORE's range)
local __es_two = {RENAME=1, RENAMENX=1, ZRANGESTORE=1, SMOVE=1, COPY=1, LMOVE=1, RPOPLPUSH=1, GEOSEARCHSTORE=1, LCS=1}
local __es_numkeys = {ZUNION=2, ZINTER=2, ZDIFF=2, ZINTERCARD=2, SINTERCARD=2, ZMPOP=2, LMPOP=2, ZUNIONSTORE=3, ZINTERSTORE=3, ZDIFFSTORE=3}
local function __es_check(args)
  local name = string.upper(tostring(args[1]))
  if __es_refused[name] or string.sub(name, 1, 5) == 'TOPK.' then
    error({err = 'ERR Command is not available in scripts on Upstash: ' .. name})
  end
  local keys = {}
  if __es_keyless[name] then
  elseif __es_all[name] then for i = 2, #args do keys[#keys + 1] = args[i] end
  elseif __es_two[name] then keys[1] = args[2] keys[2] = args[3]
  elseif name == 'BITOP' then for i = 3, #args do keys[#keys + 1] = args[i] end
  elseif __es_numkeys[name] then
    local at = __es_numkeys[name]
    if at == 3 then keys[1] = args[2] end
    for i = at + 1, at + (tonumber(args[at]) or 0) do keys[#keys + 1] = args[i] end
  elseif name == 'MSET' or name == 'MSETNX' then for i = 2, #args, 2 do keys[#keys + 1] = args[i] end
  elseif args[2] ~= nil then keys[1] = args[2] end
  for _, k in ipairs(keys) do
    if not __es_declared[tostring(k)] then
      error({err = 'ERR script touched key ' .. tostring(k) .. ' that is not in KEYS (Upstash locks only declared keys)'})
    end
  end
end
local function __es_call(...) __es_check({...}) return redis.call(...) end
local function __es_pcall(...) __es_check({...}) return redis.pcall(...) end
`;

export const sha1 = (text: string | Buffer) => createHash("sha1").update(text).digest("hex");

/** The script Redis 7.0 runs for `text`: Upstash's flag removed, the key guard added. */
export function rewriteScript(text: string): string {
  let body = text;
  let shebang = "";
  if (body.startsWith("#!")) {
    const end = body.indexOf("\n");
    const first = end < 0 ? body : body.slice(0, end);
    body = end < 0 ? "" : body.slice(end + 1);
    const flags = (/flags=(\S*)/.exec(first)?.[1] ?? "").split(",").filter((f) => f && f !== "allow-key-locking");
    shebang = `#!lua${flags.length ? ` flags=${flags.join(",")}` : ""}\n`;
  }
  // Every reference, not only calls: `local call = redis.call` must not slip past the guard.
  body = body.replace(/\bredis\s*\.\s*(p?call)\b/g, "__es_$1");
  return `${shebang}${KEY_GUARD}${body}`;
}
