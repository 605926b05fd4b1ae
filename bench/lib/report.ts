/** Writes bench/results/README.md (tables) and bench/results/bench.svg (charts). */
import { writeFileSync } from "node:fs";
import type { Measured } from "./measure.ts";
import { bars, document, lines } from "./svg.ts";
import type { Curve, ScalingResult } from "../scaling/types.ts";
import type { MemoryFigures } from "../presence-memory.ts";
import type { CpuResult, JobRun, JobsResult } from "../cpu/index.ts";
import { workerdTable } from "../cold-start-workerd.ts";

export interface ScenarioResult {
  scenario: string;
  feature: string;
  label: string;
  service: Measured | null;
  naive: Measured | null;
  /** The floor Worker (one pipelined Upstash call, nothing else) under the same load. */
  floor?: Measured | null;
  error?: string;
}

export interface Report {
  started: number;
  elapsed: number;
  results: ScenarioResult[];
  /** The same scenarios with `rttMs` added to every Redis round trip (sequential calls only). */
  rtt: ScenarioResult[];
  rttMs: number;
  cpu: CpuResult | null;
  jobs: JobsResult | null;
  scaling: ScalingResult | null;
  memory: MemoryFigures | null;
  quick: boolean;
  partial: boolean;
}

const f = (v: number | undefined | null, digits = 1) =>
  v === undefined || v === null || !Number.isFinite(v) ? "–" : v >= 100 ? v.toFixed(0) : v.toFixed(digits);
const cost = (v: number | undefined | null) =>
  v === undefined || v === null || !Number.isFinite(v) ? "–" : String(+v.toFixed(2));
/** service ÷ naive, as `×0.25`. */
const ratio = (svc: number | undefined | null, naive: number | undefined | null) =>
  svc === undefined ||
  svc === null ||
  naive === undefined ||
  naive === null ||
  !Number.isFinite(svc) ||
  !Number.isFinite(naive) ||
  naive === 0
    ? ""
    : ` (×${+(svc / naive).toPrecision(2)})`;

/** Growth of `value` with `n`, from the log-log slope between the first and last points. */
export function growth(points: { n: number; v: number }[]): string {
  const ok = points.filter((p) => p.v > 0 && p.n > 0);
  const a = ok[0];
  const b = ok[ok.length - 1];
  if (!a || !b || a === b) return "–";
  const slope = Math.log(b.v / a.v) / Math.log(b.n / a.n);
  const factor = b.v / a.v;
  const kind = slope < 0.1 ? "flat" : slope < 0.5 ? "log-like" : slope < 0.85 ? "sublinear" : "linear";
  return `${kind} (×${+factor.toPrecision(2)} over ×${+(b.n / a.n).toPrecision(2)} N)`;
}

function scenarioTable(results: ScenarioResult[]): string {
  const head =
    "| scenario | service req/s | naive req/s | floor req/s | service p50 / p95 / p99 ms | naive p50 / p95 / p99 ms | floor p50 / p99 ms | Redis round trips / call (service · naive) | Redis commands / call (service · naive) |\n" +
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const rows = results.map((r) => {
    if (r.error || !r.service || !r.naive)
      return `| ${r.label} | failed: ${(r.error ?? "no result").replace(/\|/g, "/").slice(0, 160)} | | | | | | | |`;
    if (!r.naive.load && r.service.load) {
      // No naive load (1,000-item batches): its sequential latency instead.
      const s = r.service.load;
      const fl = r.floor?.load;
      return (
        `| ${r.label} | ${f(s.rps, 0)} | no load; one call: ${f(r.naive.cost.p50, 0)} ms | ${f(fl?.rps, 0)} | ${f(s.p50)} / ${f(s.p95)} / ${f(s.p99)} | – | ${f(fl?.p50)} / ${f(fl?.p99)} | ` +
        `**${cost(r.service.cost.requests)}** · ${cost(r.naive.cost.requests)}${ratio(r.service.cost.requests, r.naive.cost.requests)} | **${cost(r.service.cost.commands)}** · ${cost(r.naive.cost.commands)}${ratio(r.service.cost.commands, r.naive.cost.commands)} |`
      );
    }
    const s = r.service;
    const n = r.naive;
    const sl = s.load;
    const nl = n.load;
    const fl = r.floor?.load;
    return (
      `| ${r.label} | ${f(sl?.rps, 0)}${ratio(sl?.rps, nl?.rps)} | ${f(nl?.rps, 0)} | ${f(fl?.rps, 0)} | ` +
      `${f(sl?.p50)} / ${f(sl?.p95)} / ${f(sl?.p99)}${ratio(sl?.p99, nl?.p99)} | ${f(nl?.p50)} / ${f(nl?.p95)} / ${f(nl?.p99)} | ${f(fl?.p50)} / ${f(fl?.p99)} | ` +
      `**${cost(s.cost.requests)}** · ${cost(n.cost.requests)}${ratio(s.cost.requests, n.cost.requests)} | **${cost(s.cost.commands)}** · ${cost(n.cost.commands)}${ratio(s.cost.commands, n.cost.commands)} |`
    );
  });
  return head + rows.join("\n") + "\n";
}

function breakdown(results: ScenarioResult[]): string {
  const fmt = (by: Record<string, number> | undefined) =>
    by && Object.keys(by).length
      ? Object.entries(by)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k.toUpperCase()} ${+v.toFixed(2)}`)
          .join(", ")
      : "none";
  const statuses = (m: Measured | null) => {
    const all: Record<string, number> = { ...(m?.cost.statuses ?? {}) };
    for (const [k, v] of Object.entries(m?.load?.statuses ?? {})) all[k] = (all[k] ?? 0) + v;
    return Object.entries(all)
      .map(([k, v]) => `${k}×${v}`)
      .join(" ");
  };
  return (
    "| scenario | service: commands per call | naive: commands per call | statuses (service · naive) |\n|---|---|---|---|\n" +
    results
      .filter((r) => r.service && r.naive)
      .map(
        (r) =>
          `| ${r.label} | ${fmt(r.service?.cost.byCommand)} | ${fmt(r.naive?.cost.byCommand)} | ${statuses(r.service)} · ${statuses(r.naive)} |`,
      )
      .join("\n") +
    "\n"
  );
}

/** Sequential latency with added round-trip time: where round trips decide. */
function rttTable(results: ScenarioResult[], rttMs: number): string {
  const head =
    `| scenario | service p50 / p95 ms | naive p50 / p95 ms | p50 service ÷ naive | round trips / call (service · naive) | round trips × ${rttMs} ms (service · naive) |\n` +
    "|---|---:|---:|---:|---:|---:|\n";
  const rows = results.map((r) => {
    if (r.error || !r.service || !r.naive)
      return `| ${r.label} | failed: ${(r.error ?? "no result").replace(/\|/g, "/").slice(0, 160)} | | | | |`;
    const s = r.service.cost;
    const n = r.naive.cost;
    return (
      `| ${r.label} | ${f(s.p50)} / ${f(s.p95)} | ${f(n.p50)} / ${f(n.p95)} | ×${+(s.p50 / n.p50).toPrecision(2)} | ` +
      `**${cost(s.requests)}** · ${cost(n.requests)} | ${f(s.requests * rttMs, 0)} · ${f(n.requests * rttMs, 0)} |`
    );
  });
  return head + rows.join("\n") + "\n";
}

/** Service over the floor Worker under the same load: what the service's own work costs. */
function floorTable(results: ScenarioResult[]): string {
  const rows = results
    .filter((r) => r.service?.load && r.floor?.load)
    .map((r) => {
      const s = r.service?.load;
      const fl = r.floor?.load;
      const sp = r.service?.cost;
      const fp = r.floor?.cost;
      return `| ${r.label} | ${f(sp?.p50, 2)} · ${f(fp?.p50, 2)} | ${f((sp?.p50 ?? NaN) - (fp?.p50 ?? NaN), 2)} | ${f(s?.p50)} · ${f(fl?.p50)} | ${s && fl ? `×${+(s.rps / fl.rps).toPrecision(2)}` : "–"} |`;
    });
  if (!rows.length) return "";
  return (
    "| scenario | sequential p50 ms (service · floor) | service − floor, ms | p50 under load ms (service · floor) | req/s service ÷ floor |\n|---|---:|---:|---:|---:|\n" +
    rows.join("\n") +
    "\n"
  );
}

function cpuTable(cpu: CpuResult): string {
  // Node's fetch of the one Upstash call, which every call but the floor row includes and workerd does natively.
  const floor = cpu.cases.find((c) => c.items === 0)?.cpuMs ?? 0;
  const rows = cpu.cases.map(
    (c) =>
      `| ${c.label} | ${c.calls} | **${f(c.cpuMs, 2)}** | ${c.items === 0 ? "" : f(c.cpuMs - floor, 2)} | ${c.targetMs === undefined ? "" : `≤ ${c.targetMs}${c.cpuMs <= c.targetMs ? " ✓" : c.cpuMs - floor <= c.targetMs ? " ✓ less the floor" : " ✗"}`} | ${f(c.wallMs, 2)} |`,
  );
  const cold = cpu.coldStart;
  const coldText = cold
    ? (() => {
        const row = (label: string, step: keyof typeof cold.median) =>
          cold.median[step] === undefined
            ? ""
            : `| ${label} | ${f(cold.min[step] ?? NaN, 1)} | ${f(cold.p25[step] ?? NaN, 1)} | **${f(cold.median[step] ?? NaN, 1)}** |\n`;
        return (
          "\n\nCold start (`node bench/cold-start.ts`: fresh Node processes, Node's own lazy parts warmed first, every module served from memory, each request built before its timing), CPU ms:\n\n" +
          "| step | min | p25 | median |\n|---|---:|---:|---:|\n" +
          row("module evaluation (target ≤ 30)", "module") +
          row("first request: a refused counter write (target ≤ 10)", "first request") +
          row("first request: a read refused by its query (loads zod)", "first read") +
          row("first request: a counter incr, 1 item, accepted", "first counter incr") +
          row("first request: a trending event, accepted", "first trending event") +
          row("first request: a presence heartbeat, accepted", "first presence heartbeat") +
          row("first request: a histogram observation (2 values), accepted", "first histogram observation") +
          row("first request: a leaderboard score change, accepted", "first leaderboard score") +
          row("first request: a trending top-10, answered (prechecked: no zod)", "first trending top") +
          row("Node's fetch of one Upstash call, warm (in each accepted write above)", "Node fetch, one Upstash call")
        );
      })()
    : "";
  return (
    "| call | calls | CPU ms / call | less the floor | target (issue 14) | wall ms / call |\n|---|---:|---:|---:|---|---:|\n" +
    rows.join("\n") +
    coldText +
    (cpu.workerdColdStart ? `\n\n${workerdTable(cpu.workerdColdStart)}` : "") +
    `\n\nNode ${cpu.node}, eval disallowed (${cpu.jitless ? "zod's JIT off, as on Workers" : "WARNING: eval was allowed"}).\n`
  );
}

/** The "Jobs" section of bench/results/README.md (also printed by `node bench/cpu/index.ts --jobs`). */
export function jobsSection(jobs: JobsResult): string {
  return (
    `## Jobs: Redis commands per hour\n\nThe bundle's \`scheduled\` entry driven by a fake clock: every minute each room gets a heartbeat from a new id (so each trim run removes the id that timed out) and the \`* * * * *\` trim run follows; ` +
    `each stream gets a 20-event batch in the hour, compacted by the \`5 * * * *\` run (every script already loaded, the day's leaderboard snapshot pass done in an earlier run, no run in the first hour of a UTC day). Commands per hour = one hourly run + 60 steady trim runs (mean over the minutes after the 5-minute timeout). Pay-as-you-go: $0.20 per 100k commands, 730 h a month.\n\n${jobsTable(jobs)}\n`
  );
}

function jobsTable(jobs: JobsResult): string {
  const fmt = (by: Record<string, number>) =>
    Object.entries(by)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k.toUpperCase()} ${+v.toFixed(1)}`)
      .join(", ");
  const rows = jobs.steps.map(
    (s) =>
      `| ${s.n.toLocaleString("en-US")} | ${s.hourly.commands.toLocaleString("en-US")} (${s.hourly.requests} round trips) | ${f(s.trim.commands, 1)} (${f(s.trim.requests, 1)} round trips) | ` +
      `**${Math.round(s.perHour).toLocaleString("en-US")}** | ${f(s.perHour / s.n, 0)} | $${((s.perHour * 730 * 0.2) / 100_000).toFixed(2)} |`,
  );
  const details = jobs.steps.map(
    (s) =>
      `- ${s.n.toLocaleString("en-US")}: hourly run ${fmt(s.hourly.byCommand)}; trim run ${fmt(s.trim.byCommand)}.`,
  );
  const run = (r: JobRun) => `${r.commands} commands (${r.requests} round trips)`;
  const { steady, dayFirstHourly, cold } = jobs.idle;
  return (
    "| active streams and rooms | hourly run (compaction + counter sweep), commands | trim run (every minute), commands | commands per hour | per stream + room per hour | per month on pay-as-you-go |\n|---:|---:|---:|---:|---:|---:|\n" +
    rows.join("\n") +
    `\n\nWith nothing to do (no streams, rooms, counters, boards or webhooks), every hour: hourly run ${run(steady.hourly)}, trim run ${run(steady.trim)}: ` +
    `**${(steady.hourly.commands + 60 * steady.trim.commands).toLocaleString("en-US")}** commands per hour. ` +
    `Once a day, the day's first hourly run: ${run(dayFirstHourly)} (the leaderboard snapshot pass of the day). ` +
    `Once, the very first runs on a database that has not loaded the job scripts (a new database, or after SCRIPT FLUSH: each script answered NOSCRIPT, then sent again by EVAL), at :05 of a day's first hour: hourly run ${run(cold.hourly)}, then trim run ${run(cold.trim)}. ` +
    `By command:\n\n${details.join("\n")}\n- nothing to do, every hour: hourly run ${fmt(steady.hourly.byCommand)}; trim run ${fmt(steady.trim.byCommand)}.\n`
  );
}

function curveTable(curve: Curve): string {
  const rows = curve.points.map(
    ({ n, point: p }) =>
      `| ${n.toLocaleString("en-US")} | ${f(p.p50, 2)} | ${f(p.p95, 2)} | ${cost(p.requests)} | ${cost(p.commands)} | ${p.note ?? ""} |`,
  );
  const lat = growth(curve.points.map(({ n, point }) => ({ n, v: point.p50 })));
  const cmd = growth(curve.points.map(({ n, point }) => ({ n, v: point.commands })));
  return (
    `**${curve.name}** — latency ${lat}; commands ${cmd}\n\n` +
    `| ${curve.nLabel} | p50 ms | p95 ms | round trips / call | commands / call | note |\n|---:|---:|---:|---:|---:|---|\n` +
    rows.join("\n") +
    "\n"
  );
}

export function writeReport(report: Report): string[] {
  const ok = report.results.filter((r) => r.service && r.naive);
  let md = `# edgestats benchmark results\n\n`;
  md +=
    `Generated by \`npm run bench\` on ${new Date(report.started).toISOString()} in ${report.elapsed.toFixed(0)} s` +
    `${report.quick ? " (quick mode: 1 s loads)" : ""}${report.partial ? " (partial run)" : ""}. ` +
    `Loopback only: redis-server ${""}7.0, the local Upstash server, \`wrangler dev\` (workerd) for the service, the naive baseline and the floor Worker alike, autocannon (8 connections) as the load.\n\n`;
  md +=
    `Ratios in parentheses are service ÷ naive. Round trips and commands are exact averages over the probe's sequential calls (20; 5 for 1,000-item batches; 10 and 3 in a quick run) after one warm-up call (scripts cached), ` +
    `read from the local Upstash server's per-tag counters (commands inside Lua scripts included, via INFO commandstats).\n\n`;
  md += `## Side by side\n\n${scenarioTable(report.results)}\n`;
  md += `### Commands per call, by command\n\n${breakdown(report.results)}\n`;
  const floors = floorTable(report.results);
  if (floors) {
    md +=
      `### Against the floor Worker\n\nThe floor Worker answers every request after one pipelined Upstash call and nothing else, under the same \`wrangler dev\`, load and machine: ` +
      `what any Worker that touches Upstash once pays here. The difference is the service's own work (routing, auth, validation, script, JSON).\n\n${floors}\n`;
  }
  if (report.rtt.length) {
    md +=
      `## With ${report.rttMs} ms per Redis round trip\n\nThe fault proxy (\`dev/fault-proxy.ts\`) sits between each Worker and the local Upstash server and delays every Redis HTTP request by ${report.rttMs} ms, ` +
      `as a Worker in one region calling a database in another would see. Sequential calls, one at a time, after one warm-up call; the edge-cache hit and 1,000-item batches are left out.\n\n${rttTable(report.rtt, report.rttMs)}\n`;
  }
  if (report.cpu) {
    md +=
      `## Worker CPU per request\n\nThe production bundle (\`wrangler deploy --dry-run\`) imported in a Node process of its own with eval disallowed, its \`fetch\` called in sequence with a \`Request\` and an env pointing at the local Upstash server; ` +
      `\`process.cpuUsage()\` around the calls, nothing subtracted, median of three passes after a warm-up. Every call includes Node's fetch of its one Upstash call, which workerd does natively: the \`floor\` row is that fetch alone, and *less the floor* is the call's CPU without it (the Worker's own, as workerd would count it, up to Node's Request and Response objects).\n\n${cpuTable(report.cpu)}\n`;
  }
  if (report.jobs) md += jobsSection(report.jobs);
  if (report.scaling) {
    md += `## Scaling\n\nSequential calls on data loaded straight into Redis; the service with its edge cache off.\n\n`;
    for (const curve of report.scaling.curves) md += curveTable(curve) + "\n";
    for (const timing of report.scaling.timings) {
      md += `**${timing.name}** — ${growth(timing.points.map((p) => ({ n: p.n, v: p.ms })))}\n\n| N | ms | detail |\n|---:|---:|---|\n`;
      md +=
        timing.points.map((p) => `| ${p.n.toLocaleString("en-US")} | ${f(p.ms, 1)} | ${p.detail ?? ""} |`).join("\n") +
        "\n\n";
    }
    if (report.scaling.notes.length) md += report.scaling.notes.map((n) => `- ${n}`).join("\n") + "\n\n";
  }
  if (report.memory) {
    const m = report.memory;
    const row = (name: string, bytes: number) =>
      `| ${name} | ${bytes.toLocaleString("en-US")} | ${f(bytes / m.ids, 1)} |`;
    md += `## Presence memory (${m.ids.toLocaleString("en-US")} UUIDs, MEMORY USAGE, Redis ${m.redisVersion})\n\nFrom \`bench/presence-memory.ts\`.\n\n| layout | bytes | per id |\n|---|---:|---:|\n`;
    md += [
      row("post step 1: sorted set of UUIDs", m.plainZsetBytes),
      row("post step 1.2: sorted set of integer ids", m.intZsetBytes),
      row("uuid → int hash (step 1.1)", m.idsHashBytes),
      row("int → uuid hash (to list members)", m.namesHashBytes),
      row("integer-mapped layout, total", m.mappedTotalBytes),
      row("active today: bitmap over int ids (exact)", m.auBitmapBytes),
      row("active today: HyperLogLog (~0.81 %)", m.auHllBytes),
    ].join("\n");
    md += `\n\nSorted set alone, mapped vs plain: ${m.zsetChangePercent} %; everything the mapped layout holds vs the plain set: ${m.totalChangePercent} %.\n\n`;
  }
  md += `![charts](bench.svg)\n`;
  // A quick or partial run must not replace the committed figures of a full one.
  const dir = report.quick || report.partial ? "bench/results/raw" : "bench/results";
  writeFileSync(`${dir}/README.md`, md);

  const width = 900;
  const parts = [
    bars(
      {
        title: "Redis commands per API call (lower is better)",
        rows: ok.map((r) => r.label),
        series: [
          { name: "service", values: ok.map((r) => r.service?.cost.commands ?? null) },
          { name: "naive", values: ok.map((r) => r.naive?.cost.commands ?? null) },
        ],
        log: true,
        unit: "commands per call",
      },
      width,
    ),
    bars(
      {
        title: "Redis HTTP round trips per API call (lower is better)",
        rows: ok.map((r) => r.label),
        series: [
          { name: "service", values: ok.map((r) => r.service?.cost.requests ?? null) },
          { name: "naive", values: ok.map((r) => r.naive?.cost.requests ?? null) },
        ],
        log: true,
        unit: "round trips per call",
      },
      width,
    ),
    bars(
      {
        title: "p99 latency under load, ms (lower is better)",
        rows: ok.map((r) => r.label),
        series: [
          { name: "service", values: ok.map((r) => r.service?.load?.p99 ?? null) },
          { name: "naive", values: ok.map((r) => r.naive?.load?.p99 ?? null) },
          { name: "floor", values: ok.map((r) => r.floor?.load?.p99 ?? null) },
        ],
        log: true,
        unit: "ms",
      },
      width,
    ),
  ];
  const rttOk = report.rtt.filter((r) => r.service && r.naive);
  if (rttOk.length) {
    parts.push(
      bars(
        {
          title: `p50 latency with ${report.rttMs} ms per Redis round trip, ms (lower is better)`,
          rows: rttOk.map((r) => r.label),
          series: [
            { name: "service", values: rttOk.map((r) => r.service?.cost.p50 ?? null) },
            { name: "naive", values: rttOk.map((r) => r.naive?.cost.p50 ?? null) },
          ],
          log: true,
          unit: "ms",
        },
        width,
      ),
    );
  }
  if (report.cpu) {
    const cases = report.cpu.cases;
    parts.push(
      bars(
        {
          title: "Worker CPU per request, ms (production bundle, Node, eval off)",
          rows: cases.map((c) => c.label),
          series: [{ name: "CPU ms", values: cases.map((c) => c.cpuMs) }],
          log: true,
          unit: "ms",
        },
        width,
      ),
    );
  }
  if (report.scaling && report.scaling.curves.length) {
    parts.push(
      lines(
        {
          title: "Scaling: p50 latency of one call vs data size",
          xLabel: "N",
          yLabel: "ms",
          series: report.scaling.curves.map((c) => ({
            name: c.name.slice(0, 28),
            points: c.points.map((p) => [p.n, p.point.p50] as [number, number]),
          })),
        },
        width,
        0,
        320,
      ),
    );
    parts.push(
      lines(
        {
          title: "Scaling: Redis commands per call vs data size",
          xLabel: "N",
          yLabel: "commands",
          series: report.scaling.curves.map((c) => ({
            name: c.name.slice(0, 28),
            points: c.points.map((p) => [p.n, p.point.commands] as [number, number]),
          })),
        },
        width,
        0,
        320,
      ),
    );
  }
  writeFileSync(`${dir}/bench.svg`, document(width, parts));
  return [`${dir}/README.md`, `${dir}/bench.svg`];
}
