/**
 * CPU figures for the cold-start benches (bench/cold-start-workerd.ts): a V8 CPU profile's time and
 * self time per function, a Chrome DevTools Protocol session to take one from workerd's inspector,
 * and a process's CPU from the kernel's per-thread counters.
 */
import { readdirSync, readFileSync } from "node:fs";

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}
export interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}
export interface ProfileCpu {
  /** Milliseconds of every sample but `(idle)`. */
  cpu: number;
  /** Of which `(program)` and `(garbage collector)`. */
  program: number;
  gc: number;
  /** Self time per function (µs), `name url:line:column`. */
  self: Map<string, number>;
}

/** The CPU of a profile: each sample lasts until the next one (the last one until the end). */
export function profileCpu(profile: CpuProfile): ProfileCpu {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const times: number[] = [];
  let t = profile.startTime;
  for (const delta of profile.timeDeltas) times.push((t += delta));
  let cpu = 0;
  let program = 0;
  let gc = 0;
  const self = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const duration = (times[i + 1] ?? profile.endTime) - (times[i] ?? profile.endTime);
    const frame = nodes.get(id)?.callFrame;
    const name = frame?.functionName ?? "?";
    if (name === "(idle)") return;
    cpu += duration;
    if (name === "(program)") program += duration;
    if (name === "(garbage collector)") gc += duration;
    const where = frame?.url ? ` ${frame.url.split("/").pop()}:${frame.lineNumber + 1}:${frame.columnNumber + 1}` : "";
    const label = `${name || "(anonymous)"}${where}`;
    self.set(label, (self.get(label) ?? 0) + duration);
  });
  return { cpu: cpu / 1000, program: program / 1000, gc: gc / 1000, self };
}

/** A Chrome DevTools Protocol session over the inspector's WebSocket. */
export async function cdp(url: string) {
  const ws = new WebSocket(url);
  await new Promise((ok, fail) => {
    ws.addEventListener("open", ok, { once: true });
    ws.addEventListener("error", () => fail(new Error(`inspector ${url}: could not connect`)), { once: true });
  });
  let next = 1;
  const pending = new Map<number, { ok: (v: any) => void; fail: (e: Error) => void }>();
  ws.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const waiter = message.id === undefined ? undefined : pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id!);
    if (message.error) waiter.fail(new Error(message.error.message));
    else waiter.ok(message.result);
  });
  return {
    send<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
      const id = next++;
      ws.send(JSON.stringify({ id, method, params }));
      return new Promise<T>((ok, fail) => pending.set(id, { ok, fail }));
    },
    close: () => ws.close(),
  };
}

/** The workerd process miniflare spawned (a child of this process). */
export function workerdPid(): number {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
      const [, comm = "", rest = ""] = /^\d+ \((.*)\) (.*)$/s.exec(stat) ?? [];
      if (comm.startsWith("workerd") && Number(rest.split(" ")[1]) === process.pid) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error("no workerd child process found");
}

/**
 * CPU time of a process so far, in ms, from the scheduler's ns counters
 * (/proc/<pid>/task/<tid>/schedstat): its main thread, where workerd runs every isolate (what a
 * Worker's CPU limit counts), and all its threads (V8's background threads too: concurrent
 * compilation and GC).
 */
export function processCpuMs(pid: number): { thread: number; all: number } {
  let all = 0;
  let thread = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      all += ns;
      if (tid === String(pid)) thread = ns;
    } catch {
      // a thread that ended meanwhile
    }
  }
  return { thread: thread / 1e6, all: all / 1e6 };
}
