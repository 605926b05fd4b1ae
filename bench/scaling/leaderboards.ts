/**
 * Leaderboards as a board grows to 1M players, loaded straight into Redis with
 * the service's key schema (src/leaderboards/keys.ts) after one player joined
 * through the API (which creates the board's settings).
 */
import type { RespClient } from "../../dev/resp.ts";
import { boardKeys, registryKey, SEQ_WIDTH, type BoardKeys } from "../../src/leaderboards/keys.ts";
import { call } from "../lib/measure.ts";
import { sample, timed } from "./measure.ts";
import type { Curve, ScalingInput, Timing } from "./types.ts";

const CHUNK = 5000;

/**
 * Players `p<from>`..`p<to - 1>` straight into a board's ranking, players and profiles hashes, as
 * the join script writes them (seq = i + 1: player p0 joined through the API with seq 1).
 */
export async function loadPlayers(
  redis: RespClient,
  keys: BoardKeys,
  from: number,
  to: number,
  joinedAt: number,
): Promise<void> {
  for (let start = Math.max(from, 1); start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK);
    const zadd: (string | number)[] = ["ZADD", keys.ranking];
    const players: (string | number)[] = ["HSET", keys.players];
    const profiles: (string | number)[] = ["HSET", keys.profiles];
    for (let i = start; i < end; i++) {
      const member = `${String(i + 1).padStart(SEQ_WIDTH, "0")}:p${i}`;
      zadd.push(-((i * 7919) % 1_000_003), member);
      // the entry as the join script writes it: '<joinedAt><policy letter>:<member>' (the
      // season, best and previous ranks after a '|' are optional and filled by the first write)
      players.push(`p${i}`, `${joinedAt}j:${member}`);
      profiles.push(`p${i}`, JSON.stringify({ name: `Player ${i}`, meta: null }));
    }
    await redis.pipeline([zadd, players, profiles]);
  }
  await redis.call("HSET", keys.settings, "seq", to);
}

export async function leaderboardScaling(input: ScalingInput): Promise<{ curves: Curve[]; timings: Timing[] }> {
  const { redis, upstash, side, prefix, log } = input;
  const board = "scale-board";
  const keys = boardKeys(prefix, board);
  const first = await call(side, "PUT", `/v1/leaderboards/${board}/players/p0`, { name: "Player 0" });
  if (first.status >= 300) throw new Error(`join: ${first.status} ${JSON.stringify(first.json).slice(0, 200)}`);
  const curves = {
    player: { name: "leaderboard player + rank", nLabel: "players on the board", points: [] } as Curve,
    page: { name: "leaderboard page (deep, middle)", nLabel: "players on the board", points: [] } as Curve,
    around: { name: "leaderboard around-me (k=5)", nLabel: "players on the board", points: [] } as Curve,
    score: { name: "leaderboard score increment", nLabel: "players on the board", points: [] } as Curve,
    subset: {
      name: "leaderboard subset ranking (10 players spread over the board)",
      nLabel: "players on the board",
      points: [],
    } as Curve,
  };
  const loading: Timing = { name: "loading N players straight into Redis (bench setup)", points: [] };
  let loaded = 1;
  const joinedAt = Date.now();
  for (const n of input.sizes) {
    log(`leaderboard scaling N=${n}: loading`);
    const t = await timed(() => loadPlayers(redis, keys, loaded, n, joinedAt));
    loading.points.push({ n, ms: t.ms });
    loaded = n;
    const mid = `p${Math.floor(n / 2)}`;
    const deepPage = Math.max(1, Math.floor(n / 2 / 10));
    curves.player.points.push({
      n,
      point: await sample(upstash, side, "GET", `/v1/leaderboards/${board}/players/${mid}`, 10, {
        note: (j) => `rank=${j?.rank} percentile=${j?.percentile}`,
      }),
    });
    const friends = Array.from({ length: 10 }, (_, i) => `p${Math.floor((i * n) / 10)}`);
    curves.subset.points.push({
      n,
      point: await sample(upstash, side, "POST", `/v1/leaderboards/${board}/rank`, 10, { body: { players: friends } }),
    });
    curves.page.points.push({
      n,
      point: await sample(upstash, side, "GET", `/v1/leaderboards/${board}?page=${deepPage}&limit=10`, 10),
    });
    curves.around.points.push({
      n,
      point: await sample(upstash, side, "GET", `/v1/leaderboards/${board}/players/${mid}/around?k=5`, 10),
    });
    curves.score.points.push({
      n,
      point: await sample(upstash, side, "POST", `/v1/leaderboards/${board}/players/${mid}/score`, 10, {
        body: { by: 1 },
      }),
    });
  }
  // A board of 1M players left behind would be copied by every later leaderboards.snapshot run.
  await redis.call("UNLINK", ...Object.values(keys));
  await redis.call("ZREM", registryKey(prefix), board);
  return { curves: Object.values(curves), timings: [loading] };
}
