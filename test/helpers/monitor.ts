/**
 * A Redis MONITOR connection for tests that count what redis-server really executes (the
 * EVALSHA/EVAL and each command a script runs, MONITOR's "lua" lines), independently of the local
 * Upstash server's own counting (test/redis/review3-costs*.test.ts).
 */
import { connect, type Socket } from "node:net";
import { command, type RestTarget } from "./upstash-rest.ts";

export interface MonitorLine {
  /** Run by a script (MONITOR's "lua" source). */
  lua: boolean;
  args: string[];
}

/** The local server's own bookkeeping around a script (MULTI, INFO commandstats, EXEC) and the markers: not billed. */
export const BOOKKEEPING = new Set(["MULTI", "EXEC", "INFO", "ECHO"]);

/** Every command redis-server executes, as parsed lines, from when `open` returns. */
export class Monitor {
  lines: MonitorLine[] = [];
  private started = false;
  private buf = "";
  private waiters: (() => void)[] = [];
  private readonly sock: Socket;
  private readonly target: RestTarget;
  private constructor(sock: Socket, target: RestTarget) {
    this.sock = sock;
    this.target = target;
    sock.setEncoding("latin1");
    sock.on("data", (d: string) => {
      this.buf += d;
      let i: number;
      while ((i = this.buf.indexOf("\r\n")) >= 0) {
        const raw = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 2);
        const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(raw);
        if (!m) {
          if (raw === "+OK") this.started = true; // MONITOR's own reply: it sees every command from here
          for (const w of this.waiters.splice(0)) w();
          continue;
        }
        const args = [...(m[2] ?? "").matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((a) => unescape(a[1] ?? ""));
        this.lines.push({ lua: m[1] === "lua", args });
        for (const w of this.waiters.splice(0)) w();
      }
    });
  }

  /** MONITOR on the redis-server at `redisUrl`; markers go through the local Upstash server `target`. */
  static async open(redisUrl: string, target: RestTarget, ready: string): Promise<Monitor> {
    const url = new URL(redisUrl);
    const sock = connect(Number(url.port), url.hostname);
    await new Promise<void>((ok, fail) => sock.once("connect", ok).once("error", fail));
    const monitor = new Monitor(sock, target);
    sock.write("*1\r\n$7\r\nMONITOR\r\n");
    // A marker sent before MONITOR's "+OK" may run before MONITOR does and never be shown (review 10
    // saw this hang about one open in three on a loaded machine).
    while (!monitor.started) await new Promise<void>((r) => monitor.waiters.push(r));
    await monitor.mark(ready);
    return monitor;
  }

  /** Waits until MONITOR has shown a marker command sent now (so nothing before it is missed); its line's index. */
  async mark(id: string): Promise<number> {
    await command(this.target, "ECHO", id);
    for (;;) {
      const at = this.lines.findIndex((l) => l.args[0]?.toUpperCase() === "ECHO" && l.args[1] === id);
      if (at >= 0) return at;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  close() {
    this.sock.destroy();
  }
}

function unescape(s: string): string {
  return s.replace(/\\x([0-9a-f]{2})|\\(.)/g, (_, hex: string | undefined, c: string | undefined) =>
    hex ? String.fromCharCode(parseInt(hex, 16)) : c === "n" ? "\n" : c === "r" ? "\r" : c === "t" ? "\t" : (c ?? ""),
  );
}
