/**
 * Issue 15 point 5 for leaderboards: every path by its longest Redis script (SLOWLOG) and its
 * commands per call, N = players on the board (10k / 100k / 1M), loaded straight into Redis
 * (`loadPlayers`, the service's key schema) after one player joined through the API.
 *
 * Paths: player + rank, a page in the middle, around-me (k = 5 and the largest k), increment, set
 * (best and replace), subset ranking of 10 players spread over the board and of the most one
 * call may name, remove a player; the
 * `leaderboards.snapshot` job's first pass of the day (called until `more` is false; sliced
 * by LEADERBOARD_SNAPSHOT_CHUNK, default 5,000 members per script); the seasons read of a
 * daily board whose current and previous seasons hold N players each.
 *
 * Runnable alone: `node bench/run.ts --only=scaling-leaderboard-scripts --no-scenarios --no-rtt --no-cpu --no-jobs`.
 */
import { boardKeys, registryKey, snapshotStateKey } from "../../src/leaderboards/keys.ts";
import { rankingKey, seasonAt } from "../../src/leaderboards/seasons.ts";
import { DAY } from "../../src/time.ts";
import { MAX_BATCH } from "../../src/validation.ts";
import { call } from "../lib/measure.ts";
import { loadPlayers } from "./leaderboards.ts";
import { scriptProbe } from "./measure.ts";
import type { ScalingInput, Timing } from "./types.ts";

export async function leaderboardScriptScaling(input: ScalingInput): Promise<{ timings: Timing[]; notes: string[] }> {
  const { redis, side, prefix, log } = input;
  const probe = scriptProbe(input, "leaderboards");
  const notes: string[] = [];
  const ok = async (method: string, path: string, body?: unknown) => {
    const r = await call(side, method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
    return r.json;
  };
  const job = (j: any) => JSON.stringify(j?.result ?? j).slice(0, 200);

  for (const n of input.sizes) {
    const board = `scale-lbs-${n}`;
    const seasonal = `scale-lbs-season-${n}`;
    const keys = boardKeys(prefix, board);
    const skeys = boardKeys(prefix, seasonal);
    log(`leaderboard scripts N=${n}: loading`);
    await ok("PUT", `/v1/leaderboards/${board}/players/p0`, { name: "Player 0" });
    await loadPlayers(redis, keys, 1, n, Date.now());
    const base = `/v1/leaderboards/${board}`;
    const mid = `p${Math.floor(n / 2)}`;
    const measure = (name: string, path: string, method = "GET", describe?: (j: any) => string, body?: unknown) =>
      // reads run once unmeasured first (NOSCRIPT fallback), then 3 times (the median counts); writes are measured on their first call
      probe.measure(n, `leaderboard (N players): ${name}`, path, {
        method,
        describe,
        body,
        warm: method === "GET",
        repeat: method === "GET" ? 3 : 1,
      });
    const rank = (j: any) => `rank=${j?.rank} score=${j?.score}`;

    await measure("player + rank (middle)", `${base}/players/${mid}`, "GET", rank);
    await measure(
      "page in the middle (limit 100)",
      `${base}?page=${Math.max(1, Math.floor(n / 2 / 100))}&limit=100`,
      "GET",
      (j) => `rows=${j?.rows?.length ?? j?.items?.length}`,
    );
    await measure(
      "around-me (k=5, middle)",
      `${base}/players/${mid}/around?k=5`,
      "GET",
      (j) => `rows=${j?.items?.length}`,
    );
    await measure(
      "around-me (k=50, the most allowed)",
      `${base}/players/${mid}/around?k=50`,
      "GET",
      (j) => `rows=${j?.items?.length}`,
    );
    const friends = Array.from({ length: 10 }, (_, i) => `p${Math.floor((i * n) / 10)}`);
    await measure("subset ranking (10 players spread over the board)", `${base}/rank`, "POST", undefined, {
      players: friends,
    });
    const many = Array.from({ length: MAX_BATCH }, (_, i) => `p${Math.floor((i * n) / MAX_BATCH)}`);
    await measure(
      `subset ranking (${MAX_BATCH.toLocaleString("en-US")} players, the most allowed)`,
      `${base}/rank`,
      "POST",
      (j) => `items=${j?.items?.length}`,
      { players: many },
    );
    await measure("increment (by 1, middle)", `${base}/players/${mid}/score`, "POST", rank, { by: 1 });
    await measure("set best (middle)", `${base}/players/p${Math.floor(n / 3)}/score`, "POST", rank, {
      set: 2_000_000,
      mode: "best",
    });
    await measure("set replace (middle)", `${base}/players/p${Math.floor(n / 4)}/score`, "POST", rank, {
      set: 5,
      mode: "replace",
    });
    await measure("remove player (middle)", `${base}/players/p${Math.floor(n / 5)}`, "DELETE");

    // The snapshot job's first pass of the day over this board (other boards in the registry are
    // small or already done today): forget today's pass and this board's snapshot first.
    await redis.call("DEL", snapshotStateKey(prefix), keys.snapshot, keys.snapshotNext);
    await redis.call("HDEL", keys.settings, "snapDay", "snapBuild");
    let runs = 0;
    let scripts = 0;
    await probe.measure(n, "leaderboard (N players): leaderboards.snapshot job, first pass of the day (all runs)", "", {
      describe: (j) => `${runs} job runs, ${scripts} scripts by the job's count; last run ${job(j)}`,
      task: async () => {
        let last = { status: 200, json: null as any };
        for (let more = true; more && runs < 30;) {
          runs++;
          last = await call(side, "POST", "/internal/jobs/leaderboards.snapshot");
          if (last.status >= 300) return last;
          more = Boolean(last.json?.result?.more);
          scripts += Number(last.json?.result?.scripts ?? 0);
        }
        return last;
      },
    });
    const snapped = Number(await redis.call("ZCARD", keys.snapshot));
    notes.push(
      `Leaderboards N=${n.toLocaleString("en-US")}: the snapshot pass took ${runs} job run(s), ${scripts} scripts, and left ${snapped.toLocaleString("en-US")} players in the snapshot.`,
    );
    await measure(
      "player + rank after the snapshot (with previousRank)",
      `${base}/players/${mid}`,
      "GET",
      (j) => `${rank(j)} previousRank=${j?.previousRank}`,
    );

    // A daily board whose current and previous seasons hold the same N players.
    await ok("PUT", `/v1/leaderboards/${seasonal}`, { reset: "daily" });
    await ok("PUT", `/v1/leaderboards/${seasonal}/players/p0`, { name: "Player 0" });
    const now = Date.now();
    const today = seasonAt("daily", now).id;
    const yesterday = seasonAt("daily", now - DAY).id;
    await redis.call("COPY", keys.ranking, rankingKey(prefix, seasonal, today), "REPLACE");
    await redis.call("COPY", keys.ranking, rankingKey(prefix, seasonal, yesterday), "REPLACE");
    await redis.call("COPY", keys.profiles, skeys.profiles, "REPLACE");
    await redis.call("COPY", keys.players, skeys.players, "REPLACE");
    await measure(
      "seasons read (daily board, 2 seasons of N players)",
      `/v1/leaderboards/${seasonal}/seasons`,
      "GET",
      (j) => `seasons=${j?.seasons?.length} players=${j?.seasons?.map((s: any) => s.players).join("/")}`,
    );

    await ok("DELETE", `/v1/leaderboards/${seasonal}`);
    await ok("DELETE", base);
    await redis.call(
      "UNLINK",
      ...Object.values(keys),
      ...Object.values(skeys),
      rankingKey(prefix, seasonal, today),
      rankingKey(prefix, seasonal, yesterday),
    );
    await redis.call("ZREM", registryKey(prefix), board, seasonal);
  }
  probe.print();
  notes.push(
    "Leaderboard scripts (`--only=scaling-leaderboard-scripts`): N = players on the board; the snapshot row is the whole first pass of the day (every job run until `more: false`), its longest script one slice of LEADERBOARD_SNAPSHOT_CHUNK (5,000) members; the seasons row reads a daily board whose current and previous seasons hold N players each.",
  );
  return { timings: probe.timings(), notes };
}
