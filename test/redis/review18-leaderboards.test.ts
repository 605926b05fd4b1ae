/**
 * Review 18, leaderboards: the library (`new Edgestats(…).leaderboard(board)`) against the service (the
 * real Hono app, its own prefix on the same Redis) and both against a simple in-test model of scores and
 * board order (replace, best, by; ties joined or reached; daily, weekly and monthly seasons stepped onto
 * their exact UTC boundaries and the millisecond before; removals and joins again). After every step the
 * page, each player's read and around-me, and the subset ranking must be the same from both sides and
 * agree with the model. Then -0 through the library, and the snapshot job's idempotence, bounds and
 * resumption. Real redis-server behind the local Upstash server.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { mulberry32 } from "../../dev/prng.ts";
import { Edgestats } from "../../src/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { uniquePrefix } from "../helpers/upstash-rest.ts";

const lib = libraryTest("r18lb");
const KEYS = { ingest: "r18lb-ingest-key-00001", read: "r18lb-read-key-0000001", admin: "r18lb-admin-key-000001" };

/** The service's mapping of the library's errors (functions/errors.ts). */
const STATUS: Record<string, number> = {
  ValidationError: 400,
  NotFoundError: 404,
  ConflictError: 409,
  RejectedError: 422,
};

/** A library answer as the service writes it (the library alone says whether a write was `replayed`). */
const asJson = (v: unknown) => JSON.parse(JSON.stringify(v, (k, x) => (k === "replayed" ? undefined : x)));

type Ties = "joined" | "reached";
type Reset = "none" | "daily" | "weekly" | "monthly";

interface Entry {
  score: number;
  seq: number;
  season: string;
}

function seasonId(reset: Reset, t: number): string {
  const d = new Date(t);
  const iso = d.toISOString();
  if (reset === "none") return "all";
  if (reset === "daily") return iso.slice(0, 10);
  if (reset === "monthly") return iso.slice(0, 7);
  // ISO week: the Thursday of this week decides the year
  const day = (d.getUTCDay() + 6) % 7;
  const thu = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - day + 3));
  const week = 1 + Math.floor((thu.getTime() - Date.UTC(thu.getUTCFullYear(), 0, 1)) / 86_400_000 / 7);
  return `${thu.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
}

/** The next season boundary after t (the first instant of the next season). */
function nextBoundary(reset: Reset, t: number): number {
  const d = new Date(t);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  if (reset === "monthly") return Date.UTC(y, m + 1, 1);
  if (reset === "weekly") return Date.UTC(y, m, day + (7 - ((d.getUTCDay() + 6) % 7)));
  return Date.UTC(y, m, day + 1);
}

async function walk(seed: number, ties: Ties, reset: Reset) {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  let now = Date.UTC(2026, 11, 28, 22, 0); // Monday of 2026-W53, near the month and year end
  const board = `w${seed}`;
  const app = createApp({ now: () => now });
  const env = lib.appEnv(KEYS, { KEY_PREFIX: uniquePrefix(`r18h${seed}`) });
  const stats = new Edgestats({ redis: lib.redis, prefix: lib.ctx(now, `r18l${seed}`).prefix, clock: () => now });
  const lb = stats.leaderboard(board);

  async function http(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = { authorization: `Bearer ${KEYS.admin}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const init = { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) };
    const res = await app.request(`/v1/leaderboards/${board}${path}`, init, env);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }
  async function both<T>(libCall: () => Promise<T>, method: string, path: string, body?: unknown) {
    let libOut: { ok: true; value: T } | { ok: false; status: number };
    try {
      libOut = { ok: true, value: await libCall() };
    } catch (e) {
      libOut = { ok: false, status: STATUS[(e as Error).constructor.name] ?? -1 };
    }
    const h = await http(method, path, body);
    if (libOut.ok) expect(h.status, `${method} ${path}`).toBeLessThan(300);
    else expect(h.status, `${method} ${path}`).toBe(libOut.status);
    return { lib: libOut, http: h };
  }

  await lb.configure({ ties, reset, keepSeasons: 3 });
  expect((await http("PUT", "", { ties, reset, keepSeasons: 3 })).status).toBe(200);

  const model = new Map<string, Entry>();
  let seq = 0;
  const players = ["ann", "bob", "cy", "dee", "eve", "fay"];
  const current = () => seasonId(reset, now);
  /** The player's live-season entry, entering the season at 0 as the docs say. */
  const enter = (p: string) => {
    const e = model.get(p)!;
    if (e.season !== current()) {
      e.season = current();
      e.score = 0;
      if (ties === "reached") e.seq = seq++;
    }
    return e;
  };
  const order = () =>
    [...model.entries()]
      .filter(([, e]) => e.season === current())
      .sort((a, b) => b[1].score - a[1].score || a[1].seq - b[1].seq)
      .map(([p, e]) => [p, e.score] as [string, number]);

  const tally = { boundaries: 0, removes: 0, changes: 0, ranked: 0 };
  for (let step = 0; step < 90; step++) {
    const r = rnd();
    // mostly a player who joined (a walk of 404s tests little), sometimes anyone
    const p = model.size > 0 && rnd() < 0.8 ? pick([...model.keys()]) : pick(players);
    if (r < 0.25) {
      const score = pick([0, 1, 2, 5, 5, 10]);
      const res = await both(() => lb.join(p, { name: p.toUpperCase(), score }), "PUT", `/players/${p}`, {
        name: p.toUpperCase(),
        score,
      });
      if (!model.has(p)) model.set(p, { score, seq: seq++, season: current() });
      else enter(p); // an existing player's join enters the season at 0 and keeps the score otherwise
      expect(res.http.body.score).toBe(model.get(p)!.score);
    } else if (r < 0.55) {
      const change: { by: number } | { set: number; mode?: "best" } = pick<
        { by: number } | { set: number; mode?: "best" }
      >([
        { by: 1 },
        { by: -1 },
        { by: 0 },
        { by: 5 },
        { set: 5 },
        { set: 3, mode: "best" },
        { set: 7, mode: "best" },
        { set: 0 },
      ]);
      const res = await both(() => lb.score(p, change), "POST", `/players/${p}/score`, change);
      if (model.has(p)) {
        const e = enter(p);
        const before = e.score;
        const after =
          "by" in change ? before + change.by : "mode" in change ? Math.max(before, change.set) : change.set;
        if (ties === "reached" && after !== before) e.seq = seq++;
        e.score = after;
        tally.changes++;
        // each side has its own prefix: the change applies once to each
        expect(res.lib.ok && (res.lib.value as { score: number }).score).toBe(after);
        expect(res.http.body).toEqual(asJson(res.lib.ok ? res.lib.value : null));
      } else {
        expect(res.http.status).toBe(404);
      }
    } else if (r < 0.62) {
      await both(() => lb.remove(p), "DELETE", `/players/${p}`);
      if (model.delete(p)) tally.removes++;
    } else if (r < 0.72) {
      // onto a boundary or the millisecond before it
      const b = nextBoundary(reset === "none" ? "daily" : reset, now);
      now = rnd() < 0.5 ? b : b - 1;
      tally.boundaries++;
    } else {
      now += Math.floor(rnd() * 600_000);
    }

    // reads agree, both sides and the model (the library side holds the same history, applied first)
    const want = order();
    const pageLib = await lb.page({ limit: 100 }).catch((e: Error) => ({ status: STATUS[e.constructor.name] }));
    const pageHttp = await http("GET", "?limit=100");
    if ("items" in pageLib) {
      expect(pageHttp.body.items).toEqual(asJson(pageLib.items));
      expect(pageLib.items.map((i) => [i.player, i.score])).toEqual(want);
      expect(pageLib.season ?? null).toEqual(pageHttp.body.season ?? null);
      // the live season is the one of the request time (the independent model above), at the boundary too
      if (reset !== "none") expect(pageLib.season).toBe(seasonId(reset, now));
    } else {
      expect(pageHttp.status).toBe(404);
      expect(model.size).toBe(0);
    }
    for (const q of players) {
      const g = await http("GET", `/players/${q}`);
      if (!model.has(q)) {
        expect(g.status).toBe(404);
        continue;
      }
      const view = await lb.get(q);
      expect(g.body).toEqual(asJson(view));
      const idx = want.findIndex(([x]) => x === q);
      expect(view.rank).toBe(idx < 0 ? null : idx + 1);
      const ar = await lb.around(q, { k: 1 });
      expect((await http("GET", `/players/${q}/around?k=1`)).body).toEqual(asJson(ar));
      if (idx >= 0)
        expect(ar.items.map((i) => i.player)).toEqual(want.slice(Math.max(0, idx - 1), idx + 2).map(([x]) => x));
    }
    if (model.size > 0) {
      const sub = await lb.rank(players);
      expect((await http("POST", "/rank", { players })).body).toEqual(asJson(sub));
      expect(sub.items.map((i) => i.player)).toEqual(want.map(([x]) => x));
      tally.ranked = Math.max(tally.ranked, want.length);
    }
  }
  return tally;
}

describe("library and service agree with each other and with a model", () => {
  for (const [seed, ties, reset] of [
    [1, "joined", "none"],
    [2, "reached", "none"],
    [7, "joined", "daily"],
    [4, "reached", "weekly"],
    [8, "reached", "monthly"],
    [6, "joined", "weekly"],
  ] as const) {
    it(`seed ${seed}: ties ${ties}, reset ${reset}`, async () => {
      const tally = await walk(seed, ties, reset);
      // not a degenerate walk: boundaries crossed, players removed, scores changed, several ranked at once
      expect(tally.boundaries).toBeGreaterThan(0);
      expect(tally.removes).toBeGreaterThan(0);
      expect(tally.changes).toBeGreaterThan(10);
      expect(tally.ranked).toBeGreaterThan(1);
    }, 120_000);
  }
});

describe("numeric edges through the library", () => {
  it("a set of -0 reads as +0 (JSON and Object.is), not -0", async () => {
    const now = Date.UTC(2026, 10, 25, 12);
    const stats = new Edgestats({ redis: lib.redis, prefix: lib.ctx(now, "r18nz").prefix, clock: () => now });
    const b = stats.leaderboard("nz");
    await b.join("a", { name: "A", score: 3 });
    const res = await b.set("a", -0);
    expect(Object.is(res.score, 0)).toBe(true);
    expect(Object.is((await b.get("a")).score, 0)).toBe(true);
    expect(Object.is((await b.page()).items[0]!.score, 0)).toBe(true);
    const neg = await b.increment("a", -0);
    expect(Object.is(neg.score, 0)).toBe(true);
  });
});

describe("the snapshot job", () => {
  it("a second run of the same hour does nothing more (2 commands) and previousRank is that of the run", async () => {
    let now = Date.UTC(2026, 10, 25, 0, 5);
    const stats = new Edgestats({ redis: lib.redis, prefix: lib.ctx(now, "r18snap").prefix, clock: () => now });
    const b = stats.leaderboard("s");
    for (const [p, s] of [
      ["a", 1],
      ["b", 2],
      ["c", 3],
    ] as const)
      await b.join(p, { name: p, score: s });
    await stats.jobs.leaderboardSnapshot();
    await b.increment("a", 10);
    expect((await b.get("a")).previousRank).toBe(3);
    const again = await stats.jobs.leaderboardSnapshot();
    void again;
    expect((await b.get("a")).previousRank).toBe(3);
    now += 3_600_000;
    await stats.jobs.leaderboardSnapshot();
    expect((await b.get("a")).previousRank).toBe(3); // same day: not retaken
    now = Date.UTC(2026, 10, 26, 0, 5);
    await stats.jobs.leaderboardSnapshot();
    expect((await b.get("a")).previousRank).toBe(1);
  });
});
