/**
 * Review 6 ("is what we tell users true?"): every `npm run X` the README and docs tell a user to
 * type exists in package.json, and every repository file path the docs cite exists. Paths that are
 * clearly examples (placeholders, generated output, files a command writes) are skipped by name.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const text = (f: string) => readFileSync(join(ROOT, f), "utf8");
const scripts = Object.keys(JSON.parse(text("package.json")).scripts as Record<string, string>);

// Files that a command writes, or that only exist locally (gitignored), or placeholders.
const GENERATED = new Set([
  ".dev.vars",
  ".data/",
  "bench/results/README.md",
  "bench/results/bench.svg",
  "dist",
  "functions/worker-configuration.d.ts",
  "test/artifacts/", // screenshots, git-ignored (docs say so)
  "bench/results/raw/", // bench output, git-ignored (docs/bench.md says so)
  "shared/seeds/", // docs/background.md says these live in the steering repository
  "shared/API.md", // checked apart below (a finding)
  "API.md",
]);
const isExample = (p: string) => /[<>{}*…]|NAME|\bX\b|\.\.\./.test(p) || GENERATED.has(p) || p.startsWith("dist/");

/** Backticked or markdown-linked tokens that look like repository paths. */
function citedPaths(md: string): string[] {
  const out = new Set<string>();
  const re = /`([^`\s]+)`|\]\(([^)\s#]+)(?:#[^)]*)?\)/g;
  for (const m of md.matchAll(re)) {
    const p = (m[1] ?? m[2] ?? "").replace(/[:,.;]+$/, "");
    if (/^https?:|^mailto:/.test(p)) continue;
    if (!/^(src|functions|dev|bench|test|docs|shared)\/[\w./-]+$|^[\w-]+\.(md|toml|json|example)$/.test(p)) continue;
    out.add(p);
  }
  return [...out];
}

describe("README Quick start / npm run commands exist in package.json", () => {
  for (const doc of DOCS) {
    const cmds = [...new Set([...text(doc).matchAll(/npm run(?: -s)? ([\w:-]+)/g)].map((m) => m[1]!))];
    if (cmds.length === 0) continue;
    it(`${doc}: every \`npm run X\` is a package.json script (${cmds.join(", ")})`, () => {
      expect(cmds.filter((c) => !scripts.includes(c))).toEqual([]);
    });
  }
  it("README Quick start: `npm ci`, `npm run dev`, `npm test` are all defined (README.md ## Quick start)", () => {
    const qs = text("README.md").split("## Quick start")[1]!.split("\n## ")[0]!;
    expect(qs).toContain("npm run dev");
    expect(scripts).toContain("dev");
    expect(scripts).toContain("test");
    expect(existsSync(join(ROOT, "package-lock.json"))).toBe(true); // npm ci needs the lockfile
  });
  it('README ## Configuration: .dev.vars.example exists ("see `.dev.vars.example`")', () => {
    expect(existsSync(join(ROOT, ".dev.vars.example"))).toBe(true);
  });
});

describe("file paths cited by the docs exist", () => {
  for (const doc of DOCS) {
    const md = text(doc);
    const paths = citedPaths(md).filter((p) => !isExample(p));
    it(`${doc}: ${paths.length} cited paths exist`, () => {
      const missing = paths.filter((p) => {
        // A path inside docs/ may be relative to the doc (docs/x.md links `costs.md`).
        const candidates = [p, doc.startsWith("docs/") ? `docs/${p}` : p];
        return !candidates.some((c) => existsSync(join(ROOT, c.replace(/\/$/, ""))));
      });
      expect(missing).toEqual([]);
    });
  }
});

describe("the contract the docs cite is reachable", () => {
  // FIXED (was low, doc wrong): README.md "Where we differ from the contract" (`shared/API.md`),
  // README.md ### Counters ("API.md has numbers"), docs/presence.md:5 and docs/webhooks.md:5
  // ("Contract: ... of `API.md`") sent the reader to a file that is not in this repository (it lives
  // in the steering repository). Each doc that cites it now says so, once, where it first names it.
  it("every doc that cites API.md says it lives in the steering repository, not in this one", () => {
    const citing = DOCS.filter((d) => /API\.md/.test(text(d)));
    expect(citing.length).toBeGreaterThan(0);
    expect(existsSync(join(ROOT, "shared/API.md")) || existsSync(join(ROOT, "API.md"))).toBe(false);
    for (const d of citing) expect(text(d), d).toMatch(/steering repository/);
  });
});

describe("README ## Configuration: the defaults the table states are the code's and wrangler.toml's", () => {
  const camel = (name: string) => name.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  /** `| \`NAME\` | var | \`default\` | …` rows of the README table (one name per row). */
  const rows = [...text("README.md").matchAll(/^\| `([A-Z0-9_]+)` \| var \| `([^`]*)` \|/gm)].map(
    (m): [string, string] => [m[1]!, m[2]!],
  );

  it("every single-var row's default equals readConfig({}) (README ## Configuration table)", async () => {
    const { readConfig } = await import("../../src/config.ts");
    const config = readConfig({}) as unknown as Record<string, unknown>;
    expect(rows.length).toBeGreaterThanOrEqual(10);
    for (const [name, value] of rows) {
      const key = camel(name);
      expect(key in config, `${name} → ${key}`).toBe(true);
      expect(String(config[key]), name).toBe(value);
    }
    // the paired row: LEADERBOARD_SNAPSHOT_CHUNK, _SCRIPTS `5000`, `40`
    expect([config.leaderboardSnapshotChunk, config.leaderboardSnapshotScripts]).toEqual([5000, 40]);
    expect(config.qstashUrl).toBe("https://qstash.upstash.io");
  });

  it("PRESENCE_ID_HORIZON_DAYS is 2..3650 (README ## Configuration table)", async () => {
    const { readConfig } = await import("../../src/config.ts");
    expect(() => readConfig({ PRESENCE_ID_HORIZON_DAYS: "1" })).toThrow();
    expect(() => readConfig({ PRESENCE_ID_HORIZON_DAYS: "3651" })).toThrow();
    expect(readConfig({ PRESENCE_ID_HORIZON_DAYS: "2" }).presenceIdHorizonDays).toBe(2);
    expect(readConfig({ PRESENCE_ID_HORIZON_DAYS: "3650" }).presenceIdHorizonDays).toBe(3650);
  });

  it("wrangler.toml [vars] hold the same defaults, and the consumer is batch 100, 1 s, 10 retries, DLQ edgestats-ingest-dlq", () => {
    const toml = text("wrangler.toml");
    for (const [name, value] of rows) {
      const m = toml.match(new RegExp(`^${name} = "([^"]*)"`, "m"));
      if (m) expect(m[1], name).toBe(value);
    }
    const consumer = toml.split("[[queues.consumers]]")[1]!;
    expect(consumer).toMatch(/max_batch_size = 100\b/);
    expect(consumer).toMatch(/max_batch_timeout = 1\b/);
    expect(consumer).toMatch(/max_retries = 10\b/);
    expect(consumer).toMatch(/dead_letter_queue = "edgestats-ingest-dlq"/);
  });
});
