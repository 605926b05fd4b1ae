import { ConflictError, StorageUnavailableError } from "../errors.ts";
import type { RedisClient } from "./client.ts";

/**
 * Lua scripts: every API call is one script, so it is one HTTP round trip and
 * atomic. Every script is declared with `defineScript` (below): its keys and
 * arguments by name, the body returns a Lua value, which the script encodes
 * with cjson and we parse here.
 *
 * Write scripts are wrapped in an idempotency prelude: KEYS[1] is the
 * idempotency record (or "" when the request has no Idempotency-Key), ARGV[1]
 * the request fingerprint and ARGV[2] the record's lifetime in seconds (the
 * generated header reads the script's own keys and arguments after those). The
 * body runs only when no record exists, and its encoded result is stored in
 * the same atomic step, so a key is recorded only when the write happened and
 * a replay returns the first result. A body that refuses the request before
 * writing anything returns `{refused = '<code>', ...}`; then no record is kept.
 *
 * A record holds the fingerprint and the encoded result when that result is at
 * most RECORD_MAX_RESULT_BYTES; a larger one (a 1,000-item batch's per-item
 * results) is stored as a summary instead: its size, its SHA-1 and, for a
 * list, its length. Replaying such a record throws `SummarisedReplay` (the
 * Worker answers 200 with the summary), so no record exceeds about 2.2 KB.
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
function readText(name: string, libraries: readonly string[], body: string): string {
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
 * Largest encoded result an idempotency record stores in full (bytes). A record
 * is the 64-character fingerprint, a newline, and either `"value":<result>` or
 * a summary of about 100 bytes, so it never exceeds RECORD_MAX_RESULT_BYTES + 80.
 */
export const RECORD_MAX_RESULT_BYTES = 2048;

/** The text of a write script: the idempotency prelude around shared Lua and the body. */
function writeText(name: string, libraries: readonly string[], body: string): string {
  return `${SHEBANG}
-- edgestats:${name}
local idemKey     = KEYS[1]
local fingerprint = ARGV[1]
if idemKey ~= '' then
  local prev = redis.call('GET', idemKey)
  if prev then
    local sep = string.find(prev, '\\n', 1, true)
    if string.sub(prev, 1, sep - 1) ~= fingerprint then return '{"conflict":true}' end
    -- the rest is '"value":<result>' or '"summary":{...}' (see below)
    return '{"replayed":true,' .. string.sub(prev, sep + 1) .. '}'
  end
end
${libraries.join("\n")}
local function body()
${body}
end
local result  = body()
local encoded = cjson.encode(result)
-- A refusal ({refused = '<code>'}, decided before anything was written) leaves no
-- record: the retry of a refused request must be judged afresh.
if idemKey ~= '' and not (type(result) == 'table' and result.refused) then
  local stored = '"value":' .. encoded
  -- A large result (per-item answers of a big batch) is not kept for 24 h:
  -- its size, digest and item count are, and a replay returns those.
  if #encoded > ${RECORD_MAX_RESULT_BYTES} then
    local items = (type(result) == 'table' and #result > 0) and #result or cjson.null
    stored = '"summary":' .. cjson.encode({bytes = #encoded, sha1 = redis.sha1hex(encoded), items = items})
  end
  redis.call('SET', idemKey, fingerprint .. '\\n' .. stored, 'EX', tonumber(ARGV[2]))
end
return '{"replayed":false,"value":' .. encoded .. '}'
`;
}

const shas = new Map<string, Promise<string>>();

/** SHA-1 of the script text, as Redis computes it for EVALSHA. */
export function scriptSha(script: Script): Promise<string> {
  let sha = shas.get(script.text);
  if (!sha) {
    sha = crypto.subtle
      .digest("SHA-1", new TextEncoder().encode(script.text))
      .then((buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join(""));
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

/**
 * What every write of the library returns: its result, and whether it is the stored result of an
 * earlier call with the same idempotency key (nothing was written again).
 */
export type Written<T> = T & { replayed: boolean };

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
async function runRead<T>(redis: RedisClient, script: Script, keys: string[], args: ScriptArg[] = []): Promise<T> {
  if (script.write) throw new Error(`${script.name} is a write script; use runWrite`);
  return JSON.parse(await evaluate(redis, script, keys, args)) as T;
}

/** Runs a write script under the idempotency prelude; `replayed` says the result is the stored first one. */
async function runWrite<T>(
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

/** What an idempotency record keeps of a result larger than RECORD_MAX_RESULT_BYTES. */
export interface ReplaySummary {
  /** Size of the first result as the script encoded it (JSON bytes). */
  bytes: number;
  /** SHA-1 (hex) of that encoded result. */
  sha1: string;
  /** Its length when the result was a list (one entry per batch item), else null. */
  items: number | null;
}

/**
 * Thrown by `runWrite` for a replay whose first result was too large to keep:
 * the write was applied once (not again now), and only its summary is known.
 * Not an EdgestatsError: it reports success. The Worker answers it with 200,
 * `Idempotent-Replayed: true` and `Idempotent-Summarised: true`.
 */
export class SummarisedReplay extends Error {
  readonly summary: ReplaySummary;
  constructor(summary: ReplaySummary) {
    super(`Replayed write; its first result (${summary.bytes} bytes) was too large to keep, only its summary was.`);
    this.name = "SummarisedReplay";
    this.summary = summary;
  }
}

/** cjson encodes an empty Lua table as `{}`; use this where a script returns a list. */
export function asList<T>(value: T[] | Record<string, never> | null | undefined): T[] {
  return Array.isArray(value) ? value : [];
}

/* ------------------------------------------------------------------------------------------------
 * Declared script contracts.
 *
 * A script declares its keys and arguments by name; `defineScript` generates the Lua header that
 * binds each to a local (`local bucket = KEYS[1]`) and a TypeScript call that takes records, so
 * nothing is packed or unpacked by position by hand. A name starting with `...` is a list: a Lua
 * table of keys or arguments of any length. The wire format is an implementation detail:
 *   KEYS = [idempotency record (write scripts)], fixed keys, then every key list in order;
 *   ARGV = [fingerprint, record ttl (write scripts)], fixed args, the length of every list (key
 *          lists first), then every argument list in order.
 * Shared Lua is a `LuaLibrary` of functions with parameters, listed in `uses`; a script body reads
 * only its declared names, its libraries' functions and Lua/Redis builtins
 * (test/unit/script-contracts.test.ts parses every script and fails otherwise).
 *
 * One refusal channel: a script that declines a request before writing returns
 * `{refused = '<code>', ...details}`. The prelude keeps no idempotency record of it, and the call
 * throws the typed error the script's `refusals` map builds for that code (a code without an
 * entry is a bug and throws a plain Error).
 * ---------------------------------------------------------------------------------------------- */

/** Shared Lua: `local function`s with parameters, emitted once before a script's body. */
export interface LuaLibrary {
  readonly name: string;
  /** The functions (and constants) it defines, as the body may call them. */
  readonly exports: readonly string[];
  readonly lua: string;
  /** Libraries its functions call. */
  readonly uses: readonly LuaLibrary[];
}

/** Declares shared Lua; `exports` are the names it defines for scripts to use. */
export function defineLua(
  name: string,
  exports: readonly string[],
  lua: string,
  uses: readonly LuaLibrary[] = [],
): LuaLibrary {
  return { name, exports, lua: lua.trim(), uses };
}

type ListName<N extends string> = N extends `...${infer L}` ? L : never;
type FixedName<N extends string> = N extends `...${string}` ? never : N;

/** The keys of a call: a string per fixed key, a list per `...list`. */
export type KeysOf<K extends string> = { [P in FixedName<K>]: string } & { [P in ListName<K>]: readonly string[] };
/** The arguments of a call: a value per fixed argument, a list per `...list`. */
export type ArgsOf<A extends string> = { [P in FixedName<A>]: ScriptArg } & {
  [P in ListName<A>]: readonly ScriptArg[];
};

/** The keys and arguments of one call, as a refusal mapper sees them. */
export interface CallOf<K extends string, A extends string> {
  keys: KeysOf<K>;
  args: ArgsOf<A>;
}

/** A script's `{refused = code, ...}` result: the code and whatever else it returned. */
export type Refusal = { refused: string } & Record<string, unknown>;

export interface ScriptSpec<K extends string, A extends string> {
  /** `<feature>.<op>`, e.g. `trending.record`. */
  name: `${string}.${string}`;
  /** Keys in the order they are sent; `...name` is a list. */
  keys: readonly K[];
  /** Arguments in the order they are sent; `...name` is a list. */
  args: readonly A[];
  /** Shared Lua the body calls. */
  uses?: readonly LuaLibrary[];
  /** The body: reads the declared names, returns a value cjson can encode. */
  lua: string;
  /** The typed error of each refusal code the body may return. */
  refusals?: Record<string, (refusal: Refusal, call: CallOf<K, A>) => Error>;
}

export interface ContractScript<K extends string = string, A extends string = string> extends Script {
  readonly spec: ScriptSpec<K, A>;
  /** The names of the Lua locals the header binds (keys, then args). */
  readonly declared: readonly string[];
}

export interface ReadScript<K extends string, A extends string> extends ContractScript<K, A> {
  readonly write: false;
  run<T>(redis: RedisClient, keys: KeysOf<K>, args: ArgsOf<A>): Promise<T>;
}

export interface WriteScript<K extends string, A extends string> extends ContractScript<K, A> {
  readonly write: true;
  run<T>(
    redis: RedisClient,
    keys: KeysOf<K>,
    args: ArgsOf<A>,
    idempotency?: Idempotency,
  ): Promise<{ value: T; replayed: boolean }>;
}

const LIST = "...";

/** Every library a script uses, dependencies first, each once. */
function librariesOf(uses: readonly LuaLibrary[], out: LuaLibrary[] = []): LuaLibrary[] {
  for (const lib of uses) {
    if (out.includes(lib)) continue;
    librariesOf(lib.uses, out);
    out.push(lib);
  }
  return out;
}

/** The Lua that binds every declared name; `keyBase`/`argBase` are the prelude's own slots. */
function header(keys: readonly string[], args: readonly string[], keyBase: number, argBase: number): string {
  const fixedKeys = keys.filter((k) => !k.startsWith(LIST));
  const fixedArgs = args.filter((a) => !a.startsWith(LIST));
  const keyLists = keys.filter((k) => k.startsWith(LIST)).map((k) => k.slice(LIST.length));
  const argLists = args.filter((a) => a.startsWith(LIST)).map((a) => a.slice(LIST.length));
  const width = Math.max(0, ...[...fixedKeys, ...fixedArgs, ...keyLists, ...argLists].map((n) => n.length));
  const lines: string[] = [];
  fixedKeys.forEach((k, i) => lines.push(`local ${k.padEnd(width)} = KEYS[${keyBase + i + 1}]`));
  fixedArgs.forEach((a, i) => lines.push(`local ${a.padEnd(width)} = ARGV[${argBase + i + 1}]`));
  const lists = [...keyLists, ...argLists];
  if (lists.length > 0) {
    lines.push(`local ${lists.join(", ")} = ${lists.map(() => "{}").join(", ")}`);
    // list lengths follow the fixed args; keys, then the contents of the argument lists, follow
    const counts = argBase + fixedArgs.length;
    lines.push("do");
    lines.push(`  local k, a = ${keyBase + fixedKeys.length}, ${counts + lists.length}`);
    lists.forEach((list, i) => {
      const [source, cursor] = i < keyLists.length ? ["KEYS", "k"] : ["ARGV", "a"];
      lines.push(`  for i = 1, tonumber(ARGV[${counts + i + 1}]) do ${list}[i] = ${source}[${cursor} + i] end`);
      lines.push(`  ${cursor} = ${cursor} + #${list}`);
    });
    lines.push("end");
  }
  return lines.join("\n");
}

/** Lays out a call's keys and arguments as the header reads them. */
function wire(
  spec: ScriptSpec<string, string>,
  keys: Record<string, unknown>,
  args: Record<string, unknown>,
): { keys: string[]; args: ScriptArg[] } {
  const outKeys: string[] = [];
  const outArgs: ScriptArg[] = [];
  const counts: number[] = [];
  const listArgs: ScriptArg[] = [];
  const value = (record: Record<string, unknown>, name: string): unknown => {
    const v = record[name];
    if (v === undefined) throw new Error(`${spec.name}: no value for '${name}'`);
    return v;
  };
  for (const k of spec.keys) if (!k.startsWith(LIST)) outKeys.push(value(keys, k) as string);
  for (const a of spec.args) if (!a.startsWith(LIST)) outArgs.push(value(args, a) as ScriptArg);
  for (const k of spec.keys) {
    if (!k.startsWith(LIST)) continue;
    const list = value(keys, k.slice(LIST.length)) as readonly string[];
    counts.push(list.length);
    for (const key of list) outKeys.push(key);
  }
  for (const a of spec.args) {
    if (!a.startsWith(LIST)) continue;
    const list = value(args, a.slice(LIST.length)) as readonly ScriptArg[];
    counts.push(list.length);
    for (const arg of list) listArgs.push(arg);
  }
  for (const c of counts) outArgs.push(c);
  for (const a of listArgs) outArgs.push(a);
  return { keys: outKeys, args: outArgs };
}

/** Throws the typed error of a `{refused = code}` result; returns other results untouched. */
function checkRefusal<K extends string, A extends string>(
  spec: ScriptSpec<K, A>,
  result: unknown,
  call: CallOf<K, A>,
): void {
  if (result === null || typeof result !== "object" || !("refused" in result)) return;
  const refusal = result as Refusal;
  const map = spec.refusals?.[refusal.refused];
  if (!map) throw new Error(`${spec.name} refused with '${String(refusal.refused)}', which it does not declare`);
  throw map(refusal, call);
}

/**
 * Declares a script: its name (`<feature>.<op>`), its keys and arguments by name, the shared Lua
 * it uses, its body and its refusals. `write: true` wraps it in the idempotency prelude.
 */
export function defineScript<const K extends string, const A extends string>(
  spec: ScriptSpec<K, A> & { write: true },
): WriteScript<K, A>;
export function defineScript<const K extends string, const A extends string>(
  spec: ScriptSpec<K, A> & { write: false },
): ReadScript<K, A>;
export function defineScript<const K extends string, const A extends string>(
  spec: ScriptSpec<K, A> & { write: boolean },
): ReadScript<K, A> | WriteScript<K, A> {
  if (!/^[a-z]+\.[a-z][A-Za-z]*$/.test(spec.name)) throw new Error(`script name '${spec.name}' is not <feature>.<op>`);
  const libs = librariesOf(spec.uses ?? []).map((lib) => `-- ${lib.name}\n${lib.lua}`);
  const declared = [...spec.keys, ...spec.args].map((n) => (n.startsWith(LIST) ? n.slice(LIST.length) : n));
  const body = `${header(spec.keys, spec.args, spec.write ? 1 : 0, spec.write ? 2 : 0)}\n${spec.lua.trim()}`;
  // both kinds of body return a Lua value; the read script encodes it as the write prelude does
  const text = spec.write ? writeText(spec.name, libs, body) : readText(spec.name, libs, body);
  const base: Script = { name: spec.name, write: spec.write, text };
  const call = (keys: KeysOf<K>, args: ArgsOf<A>) =>
    wire(spec as ScriptSpec<string, string>, keys as Record<string, unknown>, args as Record<string, unknown>);
  if (spec.write) {
    return {
      ...base,
      write: true,
      spec,
      declared,
      async run<T>(redis: RedisClient, keys: KeysOf<K>, args: ArgsOf<A>, idempotency?: Idempotency) {
        const sent = call(keys, args);
        const written = await runWrite<T>(redis, base, sent.keys, sent.args, idempotency);
        checkRefusal(spec, written.value, { keys, args });
        return written;
      },
    };
  }
  return {
    ...base,
    write: false,
    spec,
    declared,
    async run<T>(redis: RedisClient, keys: KeysOf<K>, args: ArgsOf<A>) {
      const sent = call(keys, args);
      const value = await runRead<T>(redis, base, sent.keys, sent.args);
      checkRefusal(spec, value, { keys, args });
      return value;
    },
  };
}
