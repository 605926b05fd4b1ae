/**
 * What this isolate knows of the scripts each Redis client's server holds: a script is believed
 * loaded once Redis answered its EVALSHA (or ran its EVAL) through that client, until an EVALSHA
 * of it is answered NOSCRIPT. The jobs' subrequest budget (src/job-budget.ts) keeps a re-send in
 * reserve only for the scripts not believed loaded; after a first run almost none are.
 *
 * Redis can still lose them (SCRIPT FLUSH, a restart, a failover): a NOSCRIPT for a script
 * believed loaded marks the client's scripts `lost`, and the next re-send through the budget's
 * client loads every other script believed loaded in the same HTTP request (`takeLost`), so one
 * lost script cache costs an invocation one unplanned subrequest, not one per script.
 *
 * Module state, per isolate: it lives as long as the isolate, as the scripts' SHA-1s do
 * (run.ts, scriptSha). Keyed by the client object (one per URL, token and timeout:
 * functions/middleware/context.ts, redisOf); a wrapping client (the budget's counting client)
 * shares the memory of the client it wraps (`shareLoaded`).
 */
import type { Script } from "./run.ts";

interface Memory {
  /** SHA-1 → the script and when (`clock`) Redis last answered it through the client. */
  scripts: Map<string, { script: Script; at: number }>;
  /** Redis answered NOSCRIPT for a script believed loaded: it lost the others too, most likely. */
  lost: boolean;
}

const memories = new WeakMap<object, Memory>();
/** A wrapping client → the client whose memory it shares. */
const wrapped = new WeakMap<object, object>();
/** A wrapping client → who is told each script sent through it (the job that sent it). */
const listeners = new WeakMap<object, (sha: string) => void>();
/** Counts the notes; a budget compares it with its start to tell memory older than itself. */
let clock = 0;

function memoryOf(redis: object): Memory {
  const key = wrapped.get(redis) ?? redis;
  let memory = memories.get(key);
  if (!memory) {
    memory = { scripts: new Map(), lost: false };
    memories.set(key, memory);
  }
  return memory;
}

/**
 * `wrapper` (a client sending through `redis`) shares `redis`'s memory; `sent` hears the SHA-1 of
 * each script answered through `wrapper` (loaded or NOSCRIPT).
 */
export function shareLoaded(wrapper: object, redis: object, sent?: (sha: string) => void): void {
  wrapped.set(wrapper, wrapped.get(redis) ?? redis);
  if (sent) listeners.set(wrapper, sent);
}

/** Redis ran `script` (EVALSHA answered, or EVAL) through `redis`: it holds it now. */
export function noteLoaded(redis: object, sha: string, script: Script): void {
  memoryOf(redis).scripts.set(sha, { script, at: ++clock });
  listeners.get(redis)?.(sha);
}

/** Redis answered NOSCRIPT for `sha` through `redis`; when it was believed loaded, the cache was lost. */
export function noteNoScript(redis: object, sha: string): void {
  const memory = memoryOf(redis);
  if (memory.scripts.delete(sha)) memory.lost = true;
  listeners.get(redis)?.(sha);
}

/** When `sha` was last answered through `redis` (`loadClock` time), or undefined when not believed loaded. */
export function loadedAt(redis: object, sha: string): number | undefined {
  return memoryOf(redis).scripts.get(sha)?.at;
}

/** The notes' count so far: a note after this was made later. */
export function loadClock(): number {
  return clock;
}

/**
 * When Redis lost a script believed loaded since the last call: the scripts still believed loaded
 * (to load again), and the flag is cleared; else none.
 */
export function takeLost(redis: object): { sha: string; script: Script }[] {
  const memory = memoryOf(redis);
  if (!memory.lost) return [];
  memory.lost = false;
  return [...memory.scripts].map(([sha, s]) => ({ sha, script: s.script }));
}

/** Forgets that `sha` is loaded (its SCRIPT LOAD failed) without marking the cache lost. */
export function forgetLoaded(redis: object, sha: string): void {
  memoryOf(redis).scripts.delete(sha);
}
