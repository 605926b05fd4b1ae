/**
 * The local Upstash: a Node HTTP server that speaks Upstash Redis' REST
 * protocol in front of a real redis-server, so the unmodified `@upstash/redis`
 * client works locally as it does against Upstash.
 *
 * - `POST /` one command, `POST /pipeline`, `POST /multi-exec`, and the path
 *   form `GET|POST /<command>/<arg>/...`; `{result}` / `{error}` envelopes,
 *   400 for a command error, 401 for a bad token, a fresh `upstash-sync-token`.
 * - `Upstash-Encoding: base64`: every string at any depth base64-encoded (bar
 *   `OK`, as Upstash does), integers as numbers, nil as null, errors plain.
 * - Refuses what Upstash does not serve (SORT, TOPK.*, blocking commands,
 *   WATCH, ...) with Upstash's kind of error, so nothing works here that fails
 *   in production.
 * - Scripts: strips Upstash's `allow-key-locking` flag (Redis 7.0 would refuse
 *   it) while keeping the client's SHA-1 valid for EVALSHA, and makes a script
 *   fail when it touches a key it did not declare in KEYS — Upstash locks only
 *   declared keys, so such a script would race in production.
 * - Counts requests and commands per token tag (token `<token>.<tag>`), the
 *   commands each script ran included (read from INFO commandstats inside the
 *   same MULTI, so concurrent requests cannot blur the figure):
 *   `GET /__local/stats?tag=`, `POST /__local/reset?tag=`.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { connectResp, ReplyError, type Arg, type Reply, type RespClient } from "./resp.ts";
import { listenOnLoopback } from "./redis.ts";
import { refusal, rewriteScript, SCRIPT_COMMANDS, sha1 } from "./upstash-rules.ts";

export interface UpstashServerOptions {
  /** `redis://127.0.0.1:6379` */
  redisUrl: string;
  /** The REST token clients must send as `Authorization: Bearer <token>` (or `<token>.<tag>`). */
  token: string;
  /** @default a free port */
  port?: number;
  /**
   * Count the commands Lua scripts run (two INFO calls wrapped around each
   * script in one MULTI). Off gives plain throughput for load tests.
   * @default true
   */
  countScriptCommands?: boolean;
  /** Log one line per request to stderr. @default false */
  log?: boolean;
}

export interface TagStats {
  requests: number;
  commands: number;
  byCommand: Record<string, number>;
}

export interface UpstashServer {
  url: string;
  port: number;
  /** Stats of one tag ("" = requests with the bare token), or of all tags when omitted. */
  stats(tag?: string): TagStats;
  reset(tag?: string): void;
  close(): Promise<void>;
}

type Json = string | number | null | Json[];

function toJson(reply: Reply, base64: boolean): Json {
  if (reply === null || typeof reply === "number") return reply;
  if (reply instanceof ReplyError) return reply.message;
  if (Array.isArray(reply)) return reply.map((r) => toJson(r, base64));
  if (Buffer.isBuffer(reply)) return base64 ? reply.toString("base64") : reply.toString("utf8");
  // Simple strings: Upstash leaves OK as it is and encodes the rest.
  return base64 && reply !== "OK" ? Buffer.from(reply as string).toString("base64") : (reply as string);
}

function parseCommandStats(info: Reply): Map<string, number> {
  const out = new Map<string, number>();
  const text =
    typeof info === "string"
      ? info
      : info && typeof info === "object" && !Array.isArray(info) && !(info instanceof ReplyError)
        ? (info as Buffer).toString("utf8")
        : "";
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)(?:.*?rejected_calls=(\d+),failed_calls=(\d+))?/gm)) {
    out.set(m[1] ?? "", Number(m[2]) + Number(m[3] ?? 0));
  }
  return out;
}

class Stats {
  readonly byTag = new Map<string, TagStats>();
  of(tag: string): TagStats {
    let s = this.byTag.get(tag);
    if (!s) this.byTag.set(tag, (s = { requests: 0, commands: 0, byCommand: {} }));
    return s;
  }
  add(tag: string, command: string, n = 1) {
    const s = this.of(tag);
    s.commands += n;
    s.byCommand[command] = (s.byCommand[command] ?? 0) + n;
  }
  total(): TagStats {
    const t: TagStats = { requests: 0, commands: 0, byCommand: {} };
    for (const s of this.byTag.values()) {
      t.requests += s.requests;
      t.commands += s.commands;
      for (const [k, v] of Object.entries(s.byCommand)) t.byCommand[k] = (t.byCommand[k] ?? 0) + v;
    }
    return t;
  }
}

/** One command result: a value or an error message. */
type Outcome = { result: Reply } | { error: string };

export async function startUpstashServer(options: UpstashServerOptions): Promise<UpstashServer> {
  const countScripts = options.countScriptCommands ?? true;
  const stats = new Stats();
  /** client SHA-1 (of the text with Upstash's flag) → SHA-1 of what Redis runs */
  const shaMap = new Map<string, string>();
  const reset = (tag?: string) => (tag === undefined ? stats.byTag.clear() : void stats.byTag.delete(tag));

  // A few pipelined connections; each request's commands are written in one
  // go, so a MULTI block is never interleaved with another request's commands.
  const POOL = 4;
  const pool: (Promise<RespClient> | undefined)[] = new Array(POOL);
  let turn = 0;
  // A dropped connection (redis-server killed or restarted) fails the requests
  // in flight on it (503s) and is replaced on the next request: no restart of
  // this server is needed once Redis is back.
  async function connection(): Promise<RespClient> {
    const i = turn++ % POOL;
    const current = pool[i];
    if (current) {
      const client = await current.catch(() => undefined);
      if (client && !client.closed) return client;
      // Another request replaced it while we waited: share that one, never open two.
      const replaced = pool[i];
      if (replaced && replaced !== current) return replaced;
    }
    const fresh = connectResp(options.redisUrl);
    pool[i] = fresh;
    fresh.catch(() => {
      if (pool[i] === fresh) pool[i] = undefined;
    });
    return fresh;
  }

  /** Rewrites script commands for Redis 7.0; returns the args to send and a result mapper. */
  function prepare(args: string[]): { send: Arg[]; map?: (r: Reply) => Reply } {
    const name = (args[0] ?? "").toUpperCase();
    if (name === "EVAL" || name === "EVAL_RO") {
      const text = args[1] ?? "";
      const rewritten = rewriteScript(text);
      shaMap.set(sha1(text), sha1(rewritten));
      return { send: [args[0] ?? "", rewritten, ...args.slice(2)] };
    }
    if (name === "EVALSHA" || name === "EVALSHA_RO") {
      const sha = (args[1] ?? "").toLowerCase();
      return { send: [args[0] ?? "", shaMap.get(sha) ?? sha, ...args.slice(2)] };
    }
    if (name === "SCRIPT" && (args[1] ?? "").toUpperCase() === "LOAD") {
      const text = args[2] ?? "";
      const rewritten = rewriteScript(text);
      const clientSha = sha1(text);
      shaMap.set(clientSha, sha1(rewritten));
      return { send: ["SCRIPT", "LOAD", rewritten], map: () => Buffer.from(clientSha) };
    }
    if (name === "SCRIPT" && (args[1] ?? "").toUpperCase() === "EXISTS") {
      return { send: ["SCRIPT", "EXISTS", ...args.slice(2).map((s) => shaMap.get(s.toLowerCase()) ?? s)] };
    }
    return { send: args };
  }

  /**
   * Counts script-inner commands from two INFO snapshots (the first INFO itself excluded, and the
   * `topLevel` commands between them, which the caller counts: a multi-exec's plain commands sit
   * between its snapshots and were counted twice; found in review 3).
   */
  function countInner(tag: string, before: Reply, after: Reply, topLevel: readonly string[][] = []) {
    const a = parseCommandStats(before);
    const b = parseCommandStats(after);
    const own = new Map<string, number>();
    for (const c of topLevel) own.set((c[0] ?? "").toLowerCase(), (own.get((c[0] ?? "").toLowerCase()) ?? 0) + 1);
    for (const [cmd, calls] of b) {
      let diff = calls - (a.get(cmd) ?? 0) - (own.get(cmd) ?? 0);
      if (cmd === "info") diff -= 1;
      if (/^(eval|evalsha|eval_ro|evalsha_ro|exec|multi)$/.test(cmd) || diff <= 0) continue;
      stats.add(tag, cmd, diff);
    }
  }

  /**
   * Runs commands; `atomic` wraps them all in one MULTI (multi-exec), otherwise
   * each script gets its own MULTI with INFO around it (for counting) and the
   * rest are plain pipelined commands. Returns per-command outcomes, or a
   * transaction-level error.
   */
  async function run(commands: string[][], tag: string, atomic: boolean): Promise<Outcome[] | { abort: string }> {
    if (atomic) {
      const refused = commands.map((c) => refusal((c[0] ?? "").toUpperCase())).find(Boolean);
      if (refused) return { abort: refused };
    }
    const prepared = commands.map(prepare);
    const wire: Arg[][] = [];
    type Slot = { kind: "plain"; at: number } | { kind: "script"; at: number } | { kind: "refused"; error: string };
    const slots: Slot[] = [];
    const hasScript = commands.some((c) => SCRIPT_COMMANDS.has((c[0] ?? "").toUpperCase()));
    if (atomic) {
      wire.push(["MULTI"]);
      if (countScripts && hasScript) wire.push(["INFO", "commandstats"]);
      for (const p of prepared) wire.push(p.send);
      if (countScripts && hasScript) wire.push(["INFO", "commandstats"]);
      wire.push(["EXEC"]);
    } else {
      commands.forEach((args, i) => {
        const name = (args[0] ?? "").toUpperCase();
        const refused = refusal(name);
        if (refused) return slots.push({ kind: "refused", error: refused });
        const send = prepared[i]?.send ?? [];
        if (countScripts && SCRIPT_COMMANDS.has(name)) {
          slots.push({ kind: "script", at: wire.length });
          wire.push(["MULTI"], ["INFO", "commandstats"], send, ["INFO", "commandstats"], ["EXEC"]);
        } else {
          slots.push({ kind: "plain", at: wire.length });
          wire.push(send);
        }
      });
    }
    const client = await connection();
    const replies = wire.length ? await client.pipeline(wire) : [];
    const outcome = (reply: Reply, i: number): Outcome => {
      if (reply instanceof ReplyError) return { error: reply.message };
      const map = prepared[i]?.map;
      return { result: map ? map(reply) : reply };
    };

    if (atomic) {
      const queued = replies.slice(
        countScripts && hasScript ? 2 : 1,
        replies.length - (countScripts && hasScript ? 2 : 1),
      );
      const queueError = queued.find((r) => r instanceof ReplyError);
      const exec = replies[replies.length - 1];
      if (queueError instanceof ReplyError) return { abort: `${queueError.message} (transaction discarded)` };
      if (!Array.isArray(exec))
        return { abort: exec instanceof ReplyError ? exec.message : "EXECABORT Transaction discarded" };
      let results = exec;
      if (countScripts && hasScript) {
        countInner(tag, exec[0] ?? null, exec[exec.length - 1] ?? null, commands);
        results = exec.slice(1, -1);
      }
      commands.forEach((c) => stats.add(tag, (c[0] ?? "").toLowerCase()));
      return results.map(outcome);
    }

    return slots.map((slot, i) => {
      const name = (commands[i]?.[0] ?? "").toLowerCase();
      stats.add(tag, name);
      if (slot.kind === "refused") return { error: slot.error };
      if (slot.kind === "plain") return outcome(replies[slot.at] ?? null, i);
      // MULTI, INFO, script, INFO, EXEC: a queue-time error sits in the script's QUEUED slot.
      const queuedReply = replies[slot.at + 2];
      if (queuedReply instanceof ReplyError) return { error: queuedReply.message };
      const exec = replies[slot.at + 4];
      if (!Array.isArray(exec)) return { error: exec instanceof ReplyError ? exec.message : "ERR script failed" };
      countInner(tag, exec[0] ?? null, exec[2] ?? null);
      return outcome(exec[1] ?? null, i);
    });
  }

  function authorize(req: IncomingMessage): string | null {
    const header = req.headers.authorization ?? "";
    const url = new URL(req.url ?? "/", "http://local");
    const presented = header.startsWith("Bearer ") ? header.slice(7) : (url.searchParams.get("_token") ?? "");
    if (presented === options.token) return "";
    if (presented.startsWith(`${options.token}.`)) return presented.slice(options.token.length + 1);
    return null;
  }

  function send(res: ServerResponse, status: number, body: unknown) {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json",
      "upstash-sync-token": randomUUID(),
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  }

  /**
   * A command as Redis arguments. `@upstash/redis` sends strings, numbers and
   * booleans (objects it serializes itself), so a null, object or nested array
   * is refused rather than quietly stringified into something Upstash would not run.
   */
  function asArgs(value: unknown): string[] | null {
    if (!Array.isArray(value) || value.length === 0) return null;
    if (
      !value.every(
        (v) => typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v)),
      )
    )
      return null;
    return value.map(String);
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://local");
    const tag = authorize(req);
    if (tag === null) return send(res, 401, { error: "WRONGPASS invalid or missing auth token" });
    const base64 = (req.headers["upstash-encoding"] ?? "").toString().toLowerCase() === "base64";
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");

    if (url.pathname === "/__local/stats") {
      const which = url.searchParams.get("tag");
      return send(res, 200, which === null ? stats.total() : stats.of(which));
    }
    if (url.pathname === "/__local/reset") {
      reset(url.searchParams.get("tag") ?? undefined);
      return send(res, 200, { result: "OK" });
    }

    let body: unknown = undefined;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        return send(res, 400, { error: "ERR failed to parse command: the body is not valid JSON" });
      }
    }

    if (url.pathname === "/pipeline" || url.pathname === "/multi-exec") {
      const atomic = url.pathname === "/multi-exec";
      const list = Array.isArray(body) ? body.map(asArgs) : null;
      if (!list || list.length === 0 || list.some((c) => c === null)) {
        return send(res, 400, {
          error:
            "ERR the body must be a non-empty JSON array of commands, each a non-empty array of strings and numbers",
        });
      }
      stats.of(tag).requests++;
      const out = await run(list as string[][], tag, atomic);
      if ("abort" in out) return send(res, 400, { error: out.abort });
      return send(
        res,
        200,
        out.map((o) => ("error" in o ? { error: o.error } : { result: toJson(o.result, base64) })),
      );
    }

    // `POST /` with a JSON array, or the path form `/set/key/value` (a body is the last argument).
    let args: string[] | null;
    if (url.pathname === "/" || url.pathname === "") args = asArgs(body);
    else {
      try {
        args = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
      } catch {
        return send(res, 400, { error: "ERR failed to parse command: the path is not valid percent-encoding" });
      }
      if (body !== undefined) args.push(typeof body === "string" ? body : raw);
    }
    if (!args || args.length === 0)
      return send(res, 400, { error: "ERR the body must be a JSON array of strings and numbers: [command, ...args]" });
    stats.of(tag).requests++;
    const out = await run([args], tag, false);
    const first = Array.isArray(out) ? out[0] : undefined;
    if (!first) return send(res, 500, { error: "ERR no reply" });
    if ("error" in first) return send(res, 400, { error: first.error });
    return send(res, 200, { result: toJson(first.result, base64) });
  }

  const server = createServer((req, res) => {
    const started = performance.now();
    handle(req, res)
      .catch((error: Error) => {
        // Redis itself is unreachable: Upstash answers 5xx then.
        if (!res.headersSent)
          send(res, 503, { error: `Service Unavailable: the database is unreachable (${error.message})` });
      })
      .finally(() => {
        if (options.log)
          console.error(
            `upstash ${req.method} ${req.url} ${res.statusCode} ${(performance.now() - started).toFixed(1)}ms`,
          );
      });
  });
  server.keepAliveTimeout = 60_000;
  const port = await listenOnLoopback(server, options.port);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    stats: (tag) => (tag === undefined ? stats.total() : stats.of(tag)),
    reset,
    async close() {
      for (const c of pool)
        c?.then(
          (client) => client.close(),
          () => undefined,
        );
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
