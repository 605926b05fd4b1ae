/**
 * `npm run schedules` (dev/schedules.ts) against a local HTTP server that
 * plays QStash's schedules API as documented (POST /v2/schedules/{destination}
 * with `Upstash-Cron`, optional `Upstash-Schedule-Id` that overwrites,
 * `Upstash-Method`, `Upstash-Retries`; GET /v2/schedules; DELETE
 * /v2/schedules/{scheduleId}) and refuses anything else, so the requests
 * @upstash/qstash sends are checked, not just counted.
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { resolve } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CRON_JOBS } from "../../functions/jobs.ts";
import { listenOnLoopback } from "../../dev/redis.ts";
import { desiredSchedules, messagesPerDay, syncSchedules, type SyncOptions } from "../../dev/schedules.ts";

const TOKEN = "qstash-test-token";
const CRON = /^(\*|\*\/\d+|\d+(,\d+)*)( (\*|\*\/\d+|\d+(,\d+)*)){4}$/;

interface Stored {
  scheduleId: string;
  cron: string;
  destination: string;
  method: string;
  header: Record<string, string[]>;
  body?: string;
  retries: number;
  createdAt: number;
  isPaused: boolean;
}

let server: Server;
let qstashUrl = "";
let schedules = new Map<string, Stored>();
let log: string[] = [];
let nextId = 1;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((ok) => {
    let text = "";
    req.on("data", (c: Buffer) => (text += c.toString()));
    req.on("end", () => ok(text));
  });
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(body === undefined ? "" : JSON.stringify(body));
    };
    const path = req.url ?? "";
    const body = await readBody(req);
    log.push(`${req.method} ${path}`);
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(401, { error: "Unauthorized" });
    if (req.method === "GET" && path === "/v2/schedules") return send(200, [...schedules.values()]);
    const create = /^\/v2\/schedules\/(.+)$/.exec(path);
    if (req.method === "POST" && create) {
      const destination = create[1]!;
      if (!/^https?:\/\/[^/]+\/internal\/jobs\/[a-z.-]+$/.test(destination))
        return send(400, { error: `bad destination ${destination}` });
      const cron = req.headers["upstash-cron"];
      if (typeof cron !== "string" || !CRON.test(cron))
        return send(400, { error: "Upstash-Cron header is required and must be a cron expression" });
      const method = (req.headers["upstash-method"] as string | undefined) ?? "POST";
      const retries = req.headers["upstash-retries"] === undefined ? 3 : Number(req.headers["upstash-retries"]);
      if (!Number.isInteger(retries) || retries < 0 || retries > 5)
        return send(400, { error: "Upstash-Retries must be 0..5 on this plan" });
      const id = (req.headers["upstash-schedule-id"] as string | undefined) ?? `scd_${nextId++}`;
      const header: Record<string, string[]> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        const forwarded = /^upstash-forward-(.+)$/.exec(name);
        if (forwarded) header[forwarded[1]!] = [String(value)];
        if (name === "content-type") header["Content-Type"] = [String(value)];
      }
      // An existing id is overwritten, as QStash documents for Upstash-Schedule-Id.
      schedules.set(id, {
        scheduleId: id,
        cron,
        destination,
        method,
        header,
        body,
        retries,
        createdAt: Date.now(),
        isPaused: false,
      });
      return send(200, { scheduleId: id });
    }
    const remove = /^\/v2\/schedules\/([^/]+)$/.exec(path);
    if (req.method === "DELETE" && remove) {
      if (!schedules.delete(decodeURIComponent(remove[1]!))) return send(404, { error: "schedule not found" });
      return send(200);
    }
    return send(405, { error: `${req.method} ${path} is not part of the schedules API` });
  });
  qstashUrl = `http://127.0.0.1:${await listenOnLoopback(server)}`;
});

afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

beforeEach(() => {
  schedules = new Map();
  log = [];
});

const opts = (extra: Partial<SyncOptions> = {}): SyncOptions => ({
  url: "https://stats.example.com",
  token: TOKEN,
  qstashUrl,
  ...extra,
});
const summary = () =>
  [...schedules.values()].map((s) => `${s.scheduleId} ${s.cron} ${s.method} ${s.destination} r${s.retries}`).sort();

describe("npm run schedules", () => {
  it("creates one schedule per job of CRON_JOBS, POSTing the job URL with the cron wrangler.toml uses", async () => {
    const plan = await syncSchedules(opts());
    expect(plan.map((s) => s.action)).toEqual(["create", "create", "create", "create", "create", "create"]);
    expect(summary()).toEqual([
      "edgestats-compact 5 * * * * POST https://stats.example.com/internal/jobs/compact r3",
      "edgestats-leaderboards.snapshot 5 * * * * POST https://stats.example.com/internal/jobs/leaderboards.snapshot r3",
      "edgestats-sweep-counters 5 * * * * POST https://stats.example.com/internal/jobs/sweep-counters r3",
      "edgestats-trim * * * * * POST https://stats.example.com/internal/jobs/trim r0",
      "edgestats-webhooks * * * * * POST https://stats.example.com/internal/jobs/webhooks r0",
      "edgestats-webhooks.trending 5 * * * * POST https://stats.example.com/internal/jobs/webhooks.trending r3",
    ]);
    for (const [cron, jobs] of Object.entries(CRON_JOBS)) {
      for (const job of jobs) expect(schedules.get(`edgestats-${job}`)?.cron).toBe(cron);
    }
    expect(schedules.get("edgestats-trim")).toMatchObject({
      body: "{}",
      header: { "Content-Type": ["application/json"] },
    });
    expect(log[0]).toBe("GET /v2/schedules");
  });

  it("is idempotent: a second run only lists", async () => {
    await syncSchedules(opts());
    log = [];
    const plan = await syncSchedules(opts());
    expect(plan.map((s) => s.action)).toEqual(["keep", "keep", "keep", "keep", "keep", "keep"]);
    expect(log).toEqual(["GET /v2/schedules"]);
    expect(schedules.size).toBe(6);
  });

  it("adopts a schedule made by hand with the same cron and destination instead of duplicating it", async () => {
    schedules.set("scd_hand", {
      scheduleId: "scd_hand",
      cron: "* * * * *",
      destination: "https://stats.example.com/internal/jobs/trim",
      method: "POST",
      header: {},
      retries: 3,
      createdAt: 0,
      isPaused: false,
    });
    const plan = await syncSchedules(opts());
    expect(plan.find((s) => s.destination.endsWith("/trim"))).toMatchObject({
      action: "adopted",
      scheduleId: "scd_hand",
    });
    expect([...schedules.values()].filter((s) => s.destination.endsWith("/trim"))).toHaveLength(1);
    expect(schedules.size).toBe(6);
  });

  it("a new Worker URL or cron replaces the schedules under the same ids: still six", async () => {
    await syncSchedules(opts());
    const plan = await syncSchedules(opts({ url: "https://stats.example.org/" }));
    expect(plan.map((s) => s.action)).toEqual(["update", "update", "update", "update", "update", "update"]);
    expect(summary().every((line) => line.includes("https://stats.example.org/internal/jobs/"))).toBe(true);
    expect(schedules.size).toBe(6);
  });

  it("--dry-run changes nothing; --delete removes ours and hand-made ones for the same job URLs, leaving others", async () => {
    const dry = await syncSchedules(opts({ dryRun: true }));
    expect(dry.map((s) => s.action)).toEqual(["create", "create", "create", "create", "create", "create"]);
    expect(log).toEqual(["GET /v2/schedules"]);
    expect(schedules.size).toBe(0);

    await syncSchedules(opts());
    const other = {
      scheduleId: "scd_other",
      cron: "0 0 * * *",
      destination: "https://elsewhere.example.com/internal/jobs/backup",
      method: "POST",
      header: {},
      retries: 3,
      createdAt: 0,
      isPaused: false,
    };
    const hand = {
      ...other,
      scheduleId: "scd_hand",
      cron: "*/5 * * * *",
      destination: "https://stats.example.com/internal/jobs/trim",
    };
    schedules.set(other.scheduleId, other);
    schedules.set(hand.scheduleId, hand);
    expect((await syncSchedules(opts({ delete: true, dryRun: true }))).map((s) => s.scheduleId).sort()).toEqual([
      "edgestats-compact",
      "edgestats-leaderboards.snapshot",
      "edgestats-sweep-counters",
      "edgestats-trim",
      "edgestats-webhooks",
      "edgestats-webhooks.trending",
      "scd_hand",
    ]);
    expect(schedules.size).toBe(8);
    await syncSchedules(opts({ delete: true }));
    expect([...schedules.keys()]).toEqual(["scd_other"]);
    expect(log.filter((l) => l.startsWith("DELETE")).sort()).toEqual([
      "DELETE /v2/schedules/edgestats-compact",
      "DELETE /v2/schedules/edgestats-leaderboards.snapshot",
      "DELETE /v2/schedules/edgestats-sweep-counters",
      "DELETE /v2/schedules/edgestats-trim",
      "DELETE /v2/schedules/edgestats-webhooks",
      "DELETE /v2/schedules/edgestats-webhooks.trending",
      "DELETE /v2/schedules/scd_hand",
    ]);
  });

  it("--only and --id-prefix: a second environment with only the hourly jobs", async () => {
    await syncSchedules(
      opts({ only: ["compact", "sweep-counters"], idPrefix: "edgestats-staging", url: "https://staging.example.com" }),
    );
    expect([...schedules.keys()].sort()).toEqual(["edgestats-staging-compact", "edgestats-staging-sweep-counters"]);
    await expect(syncSchedules(opts({ only: ["nope"] }))).rejects.toThrow(/unknown job 'nope'/);
  });

  it("a wrong token is refused by the server and surfaces as an error", async () => {
    await expect(syncSchedules(opts({ token: "wrong" }))).rejects.toThrow();
    expect(schedules.size).toBe(0);
  });

  it("the daily message budget: trim alone is 1,440 messages, over the free plan's 1,000", () => {
    const all = desiredSchedules("https://x.example");
    expect(messagesPerDay(all.filter((s) => s.job === "trim"))).toBe(1440);
    expect(messagesPerDay(all)).toBe(2976);
    expect(messagesPerDay(desiredSchedules("https://x.example", { only: ["compact", "sweep-counters"] }))).toBe(48);
  });

  it("the CLI: --dry-run works without a token; with QSTASH_URL and QSTASH_TOKEN it syncs", async () => {
    const root = resolve(import.meta.dirname, "../..");
    // Not spawnSync: the fake QStash server answers from this process's event loop.
    const run = (args: string[], env: Record<string, string>) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((ok) => {
        const { QSTASH_TOKEN: _t, QSTASH_URL: _u, ...rest } = process.env;
        const child = spawn(process.execPath, ["dev/schedules.ts", ...args], { cwd: root, env: { ...rest, ...env } });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
        child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
        child.on("close", (status) => ok({ status, stdout, stderr }));
      });
    const dry = await run(["--dry-run"], {});
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("edgestats-trim");
    expect(dry.stdout).toContain("2976 messages/day");
    const missing = await run(["--url", "https://stats.example.com"], {});
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain("QSTASH_TOKEN");
    const real = await run(["--url", "https://stats.example.com"], { QSTASH_TOKEN: TOKEN, QSTASH_URL: qstashUrl });
    expect(real.status, real.stderr).toBe(0);
    expect(real.stdout).toMatch(/create\s+edgestats-compact/);
    expect(schedules.size).toBe(6);
  });
});
