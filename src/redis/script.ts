import type { RedisClient, RedisPipeline } from "./client.ts";
import {
  readText,
  runRead,
  runReadPiped,
  runWrite,
  writeText,
  type Idempotency,
  type Script,
  type ScriptArg,
} from "./run.ts";

export {
  asList,
  canPipeline,
  scriptSha,
  SummarisedReplay,
  type Idempotency,
  type ReplaySummary,
  type Script,
  type ScriptArg,
  type Written,
} from "./run.ts";
export { RECORD_MAX_RESULT_BYTES, SAME_REQUEST_LUA } from "./idempotency-lua.ts";

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
  /**
   * Write scripts only, and only when the result does not depend on what Redis holds: a Lua
   * expression over the declared names that equals the body's result whenever the body does not
   * refuse (histograms.observe: `{accepted = #values}`). Then the idempotency prelude records that
   * result before the body runs, in one `SET … NX` (a `GET` follows only when the key is taken), so a
   * request with an Idempotency-Key costs one command more than without instead of two (issue 14).
   * A refusal or an error in the body takes the record back (`DEL`); a body returning anything
   * else fails loudly (run.ts, writeUpFrontText). The body must still refuse before its first
   * write, and its result should be small (a large one is recorded as its summary, as always).
   */
  resultUpFront?: string;
}

export interface ContractScript<K extends string = string, A extends string = string> extends Script {
  readonly spec: ScriptSpec<K, A>;
  /** The names of the Lua locals the header binds (keys, then args). */
  readonly declared: readonly string[];
}

export interface ReadScript<K extends string, A extends string> extends ContractScript<K, A> {
  readonly write: false;
  run<T>(redis: RedisClient, keys: KeysOf<K>, args: ArgsOf<A>): Promise<T>;
  /**
   * Runs the script and, in the same HTTP request, the commands `after` adds (run.ts,
   * runReadPiped: in order, not atomic, each billed); `undefined` when the client has no pipeline.
   * A refusal throws as from `run`, after the commands ran. `once`: the commands do not read what
   * the script writes and run once even when a NOSCRIPT answer sends the script again.
   */
  runPiped<T>(
    redis: RedisClient,
    keys: KeysOf<K>,
    args: ArgsOf<A>,
    after: (pipeline: RedisPipeline) => void,
    once?: boolean,
  ): Promise<{ value: T; after: unknown[] } | undefined>;
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
  spec: ScriptSpec<K, A> & { write: false; resultUpFront?: never },
): ReadScript<K, A>;
export function defineScript<const K extends string, const A extends string>(
  spec: ScriptSpec<K, A> & { write: boolean },
): ReadScript<K, A> | WriteScript<K, A> {
  if (!/^[a-z]+\.[a-z][A-Za-z]*$/.test(spec.name)) throw new Error(`script name '${spec.name}' is not <feature>.<op>`);
  if (!spec.write && spec.resultUpFront !== undefined)
    throw new Error(`${spec.name}: resultUpFront is for write scripts`);
  const declared = [...spec.keys, ...spec.args].map((n) => (n.startsWith(LIST) ? n.slice(LIST.length) : n));
  // one name, one value: a name declared twice would bind whichever came last
  const twice = declared.filter((n, i) => declared.indexOf(n) !== i);
  if (twice.length > 0) throw new Error(`${spec.name}: ${twice.join(", ")} declared twice`);
  // The text is assembled on first use, not when the module loads: a cold isolate builds only the
  // scripts its requests run (issue 14, cold start).
  let text: string | undefined;
  const textOf = () => {
    if (text === undefined) {
      const libs = librariesOf(spec.uses ?? []).map((lib) => `-- ${lib.name}\n${lib.lua}`);
      const head = header(spec.keys, spec.args, spec.write ? 1 : 0, spec.write ? 2 : 0);
      // both kinds of body return a Lua value; the read script encodes it as the write prelude does
      text = spec.write
        ? writeText(spec.name, libs, head, spec.lua.trim(), spec.resultUpFront?.trim())
        : readText(spec.name, libs, `${head}\n${spec.lua.trim()}`);
    }
    return text;
  };
  const base: Script = {
    name: spec.name,
    write: spec.write,
    get text() {
      return textOf();
    },
  };
  const call = (keys: KeysOf<K>, args: ArgsOf<A>) =>
    wire(spec as ScriptSpec<string, string>, keys as Record<string, unknown>, args as Record<string, unknown>);
  if (spec.write) {
    return {
      name: spec.name,
      get text() {
        return textOf();
      },
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
    name: spec.name,
    get text() {
      return textOf();
    },
    write: false,
    spec,
    declared,
    async run<T>(redis: RedisClient, keys: KeysOf<K>, args: ArgsOf<A>) {
      const sent = call(keys, args);
      const value = await runRead<T>(redis, base, sent.keys, sent.args);
      checkRefusal(spec, value, { keys, args });
      return value;
    },
    async runPiped<T>(
      redis: RedisClient,
      keys: KeysOf<K>,
      args: ArgsOf<A>,
      after: (pipeline: RedisPipeline) => void,
      once = false,
    ) {
      const sent = call(keys, args);
      const piped = await runReadPiped<T>(redis, base, sent.keys, sent.args, after, once);
      if (piped) checkRefusal(spec, piped.value, { keys, args });
      return piped;
    },
  };
}
