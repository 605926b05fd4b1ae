/**
 * `npm run schedules -- --url https://<worker>`: the QStash schedules of the
 * periodic jobs, as code. One schedule per job of `CRON_JOBS`
 * (functions/jobs.ts), each a `POST <url>/internal/jobs/<job>` with a fixed
 * schedule id (`<id-prefix>-<job>`), so running it again updates in place:
 *
 * - lists the account's schedules first;
 * - ours with the same cron, destination and retries: left alone;
 * - another schedule (made by hand) with the same cron and destination: left
 *   alone too, no duplicate;
 * - otherwise created, or replaced under the same id (QStash's
 *   `Upstash-Schedule-Id` overwrites the schedule with that id).
 *
 * Options: `--dry-run` prints the plan and changes nothing (without
 * `QSTASH_TOKEN` it prints the schedules it would create); `--delete` removes
 * ours and any other schedule calling the same job URLs; `--only trim,compact`
 * picks jobs; `--id-prefix edgestats-staging` for a second environment.
 * `QSTASH_TOKEN` authenticates; `QSTASH_URL` points the client elsewhere.
 */
import { Client } from "@upstash/qstash";
import { parseArgs } from "node:util";
import { CRON_JOBS } from "../functions/jobs.ts";

/** Messages a day QStash's free plan delivers (retries count too). */
export const FREE_MESSAGES_PER_DAY = 1000;

export interface DesiredSchedule {
  scheduleId: string;
  job: string;
  cron: string;
  destination: string;
  /** Trim runs every minute: a failed run is redone by the next one, so no retries (they would count as messages). */
  retries: number;
}

export type Action = "create" | "update" | "keep" | "adopted" | "delete";
export interface PlanStep {
  action: Action;
  scheduleId: string;
  cron: string;
  destination: string;
  /** For `adopted` (an existing schedule with another id) and `delete`: why. */
  note?: string;
}

export interface SyncOptions {
  /** Base URL of the deployed Worker, e.g. `https://edgestats.example.workers.dev`. */
  url: string;
  /** @default process.env.QSTASH_TOKEN */
  token?: string;
  /** @default process.env.QSTASH_URL ?? "https://qstash.upstash.io" */
  qstashUrl?: string;
  /** @default false */
  dryRun?: boolean;
  /** Remove the schedules instead of creating them. @default false */
  delete?: boolean;
  /** Jobs to schedule. @default every job in CRON_JOBS */
  only?: string[];
  /** @default "edgestats" */
  idPrefix?: string;
}

/** Runs per day of a cron expression of the two shapes CRON_JOBS uses (`* * * * *`, `M * * * *`); others count as hourly. */
export function runsPerDay(cron: string): number {
  const [minute, hour] = cron.split(/\s+/);
  const perHour = minute === "*" ? 60 : minute?.startsWith("*/") ? Math.ceil(60 / Number(minute.slice(2))) : 1;
  return perHour * (hour === "*" ? 24 : 1);
}

export function desiredSchedules(url: string, options: Pick<SyncOptions, "only" | "idPrefix"> = {}): DesiredSchedule[] {
  const base = new URL(url);
  if (base.protocol !== "https:" && base.protocol !== "http:")
    throw new Error(`--url must be an http(s) URL, not '${url}'`);
  const root = base.toString().replace(/\/+$/, "");
  const known = Object.values(CRON_JOBS).flat();
  for (const job of options.only ?? [])
    if (!known.includes(job)) throw new Error(`unknown job '${job}'; jobs: ${known.join(", ")}`);
  return Object.entries(CRON_JOBS).flatMap(([cron, jobs]) =>
    jobs
      .filter((job) => !options.only || options.only.includes(job))
      .map((job) => ({
        scheduleId: `${options.idPrefix ?? "edgestats"}-${job}`,
        job,
        cron,
        destination: `${root}/internal/jobs/${job}`,
        retries: runsPerDay(cron) > 24 ? 0 : 3,
      })),
  );
}

function clientOf(options: SyncOptions): Client {
  const token = options.token ?? process.env.QSTASH_TOKEN;
  if (!token)
    throw new Error(
      "Set QSTASH_TOKEN (Upstash console → QStash → Request builder), or use --dry-run to print the schedules.",
    );
  const baseUrl = (options.qstashUrl ?? process.env.QSTASH_URL ?? "https://qstash.upstash.io").replace(/\/+$/, "");
  // devMode false: never start QStash's local dev server behind our back; telemetry off.
  return new Client({ token, baseUrl, devMode: false, enableTelemetry: false, retry: { retries: 2 } });
}

/** Compares, then (unless dry-run) creates, updates or deletes. Returns what it did or would do. */
export async function syncSchedules(options: SyncOptions): Promise<PlanStep[]> {
  const desired = desiredSchedules(options.url, options);
  const client = clientOf(options);
  const existing = await client.schedules.list();
  const plan: PlanStep[] = [];

  if (options.delete) {
    const destinations = new Set(desired.map((d) => d.destination));
    const ids = new Set(desired.map((d) => d.scheduleId));
    for (const s of existing) {
      if (!ids.has(s.scheduleId) && !destinations.has(s.destination)) continue;
      plan.push({
        action: "delete",
        scheduleId: s.scheduleId,
        cron: s.cron,
        destination: s.destination,
        note: ids.has(s.scheduleId) ? "ours" : "same job URL",
      });
    }
    if (!options.dryRun) for (const step of plan) await client.schedules.delete(step.scheduleId);
    return plan;
  }

  for (const want of desired) {
    const mine = existing.find((s) => s.scheduleId === want.scheduleId);
    const same = (s: { cron: string; destination: string }) =>
      s.cron === want.cron && s.destination === want.destination;
    if (mine && same(mine) && mine.retries === want.retries && mine.method === "POST" && !mine.isPaused) {
      plan.push({ action: "keep", scheduleId: want.scheduleId, cron: want.cron, destination: want.destination });
      continue;
    }
    const other = existing.find((s) => s.scheduleId !== want.scheduleId && same(s));
    if (!mine && other) {
      plan.push({
        action: "adopted",
        scheduleId: other.scheduleId,
        cron: want.cron,
        destination: want.destination,
        note: "an existing schedule already calls this job",
      });
      continue;
    }
    plan.push({
      action: mine ? "update" : "create",
      scheduleId: want.scheduleId,
      cron: want.cron,
      destination: want.destination,
    });
    if (!options.dryRun) {
      await client.schedules.create({
        scheduleId: want.scheduleId,
        destination: want.destination,
        cron: want.cron,
        method: "POST",
        body: "{}",
        headers: { "Content-Type": "application/json" },
        retries: want.retries,
      });
    }
  }
  return plan;
}

/** Messages a day the schedules send (one per run, without retries). */
export function messagesPerDay(schedules: readonly { cron: string }[]): number {
  return schedules.reduce((sum, s) => sum + runsPerDay(s.cron), 0);
}

function budgetNote(schedules: readonly { cron: string }[]): string {
  const perDay = messagesPerDay(schedules);
  const over = perDay > FREE_MESSAGES_PER_DAY;
  return `${perDay} messages/day${over ? ` — more than the free plan's ${FREE_MESSAGES_PER_DAY}: keep trim on the Worker's cron trigger (--only compact,sweep-counters) or use a paid plan` : ` (free plan: ${FREE_MESSAGES_PER_DAY})`}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: "string" },
      "dry-run": { type: "boolean", default: false },
      delete: { type: "boolean", default: false },
      only: { type: "string" },
      "id-prefix": { type: "string", default: "edgestats" },
    },
  });
  const only = values.only
    ? values.only
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;
  const idPrefix = values["id-prefix"];
  const dryRun = values["dry-run"];
  if (!values.url && !dryRun)
    throw new Error(
      "Usage: npm run schedules -- --url https://<worker> [--dry-run] [--delete] [--only compact,trim] [--id-prefix edgestats]",
    );
  // A dry run without --url shows the shape with a placeholder host.
  const url = values.url ?? "https://your-worker.example.workers.dev";
  const selection = { ...(only ? { only } : {}), idPrefix };
  if (dryRun && !process.env.QSTASH_TOKEN) {
    const desired = desiredSchedules(url, selection);
    console.log(
      `dry run (no QSTASH_TOKEN, so nothing compared): the schedules ${values.delete ? "to delete" : "to create or update"}:`,
    );
    for (const d of desired)
      console.log(`  ${d.scheduleId.padEnd(28)} ${d.cron.padEnd(12)} POST ${d.destination} (retries ${d.retries})`);
    console.log(budgetNote(desired));
    return;
  }
  const plan = await syncSchedules({ url, dryRun, delete: values.delete, idPrefix, ...(only ? { only } : {}) });
  console.log(dryRun ? "dry run, nothing changed:" : values.delete ? "deleted:" : "schedules:");
  for (const step of plan) {
    console.log(
      `  ${step.action.padEnd(8)} ${step.scheduleId.padEnd(28)} ${step.cron.padEnd(12)} POST ${step.destination}${step.note ? ` (${step.note})` : ""}`,
    );
  }
  if (plan.length === 0) console.log("  nothing to do");
  if (!values.delete) console.log(budgetNote(desiredSchedules(url, selection)));
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
