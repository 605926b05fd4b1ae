/**
 * MEMORY USAGE of presence data for 100,000 UUIDs: the seed post's plain
 * sorted set of ids against its "optimisation" (ids mapped to small integers,
 * the integers in the sorted set), with the mapping hashes that optimisation
 * needs counted too, and the exact-AU bitmap against a HyperLogLog.
 *
 * `node bench/presence-memory.ts [redis://127.0.0.1:6379] [--ids=100000]`
 * (without a URL it starts a throwaway redis-server); `npm run bench` calls
 * `presenceMemory(url)`. Talks RESP to Redis directly: MEMORY is not served
 * over Upstash's REST API.
 */
import { randomUUID } from "node:crypto";
import { connectResp, type Arg, type RespClient } from "../dev/resp.ts";

export interface MemoryFigures {
  ids: number;
  idBytes: number;
  redisVersion: string;
  /** The post's step 1: ZADD room <ts> <uuid>. */
  plainZsetBytes: number;
  /** The post's step 1.2: ZADD room <ts> <int>. */
  intZsetBytes: number;
  /** uuid → int (the post's step 1.1; also what tells a new id from a returning one). */
  idsHashBytes: number;
  /** int → uuid, needed to list who is online. */
  namesHashBytes: number;
  /** intZset + idsHash + namesHash: what the mapped layout really holds. */
  mappedTotalBytes: number;
  /** Sorted set alone, mapped against plain (negative = smaller). */
  zsetChangePercent: number;
  /** Everything, mapped against plain. */
  totalChangePercent: number;
  /** Sorted set bytes per id, plain and mapped. */
  plainBytesPerId: number;
  intBytesPerId: number;
  /** Active-users-today as a bitmap over the integer ids (exact) and as a HyperLogLog (~0.81 % error). */
  auBitmapBytes: number;
  auHllBytes: number;
}

const CHUNK = 1000;

async function pipelined(redis: RespClient, commands: Arg[][]): Promise<void> {
  for (let i = 0; i < commands.length; i += CHUNK) {
    const replies = await redis.pipeline(commands.slice(i, i + CHUNK));
    const failed = replies.find((r) => r instanceof Error);
    if (failed) throw failed;
  }
}

async function usage(redis: RespClient, key: string): Promise<number> {
  // SAMPLES 0 walks every element: exact, not the default 5-element estimate.
  return Number(await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0"));
}

export async function presenceMemory(redisUrl: string, count = 100_000): Promise<MemoryFigures> {
  const redis = await connectResp(redisUrl);
  const prefix = `pmem-${randomUUID().slice(0, 8)}`;
  const k = {
    plain: `${prefix}:plain`,
    ints: `${prefix}:ints`,
    ids: `${prefix}:ids`,
    names: `${prefix}:names`,
    bitmap: `${prefix}:au`,
    hll: `${prefix}:hll`,
  };
  try {
    const info = String(await redis.call("INFO", "server"));
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
    const ids = Array.from({ length: count }, () => randomUUID());
    const base = Date.UTC(2026, 10, 22, 12, 0);
    // Last-seen times spread over the five-minute timeout, as a live room has them.
    const seen = ids.map(() => base + Math.floor(Math.random() * 300_000));
    await pipelined(
      redis,
      ids.map((id, i) => ["ZADD", k.plain, seen[i] ?? base, id]),
    );
    await pipelined(
      redis,
      ids.map((_, i) => ["ZADD", k.ints, seen[i] ?? base, i + 1]),
    );
    await pipelined(
      redis,
      ids.map((id, i) => ["HSET", k.ids, id, i + 1]),
    );
    await pipelined(
      redis,
      ids.map((id, i) => ["HSET", k.names, i + 1, id]),
    );
    await pipelined(
      redis,
      ids.map((_, i) => ["SETBIT", k.bitmap, i + 1, 1]),
    );
    for (let i = 0; i < ids.length; i += CHUNK) await redis.call("PFADD", k.hll, ...ids.slice(i, i + CHUNK));
    const [plain, ints, idsHash, names, bitmap, hll] = await Promise.all(
      [k.plain, k.ints, k.ids, k.names, k.bitmap, k.hll].map((key) => usage(redis, key)),
    );
    const p = plain ?? 0;
    const mapped = (ints ?? 0) + (idsHash ?? 0) + (names ?? 0);
    const pct = (x: number) => Math.round((x / p - 1) * 1000) / 10;
    return {
      ids: count,
      idBytes: ids[0]?.length ?? 0,
      redisVersion,
      plainZsetBytes: p,
      intZsetBytes: ints ?? 0,
      idsHashBytes: idsHash ?? 0,
      namesHashBytes: names ?? 0,
      mappedTotalBytes: mapped,
      zsetChangePercent: pct(ints ?? 0),
      totalChangePercent: pct(mapped),
      plainBytesPerId: Math.round((p / count) * 10) / 10,
      intBytesPerId: Math.round(((ints ?? 0) / count) * 10) / 10,
      auBitmapBytes: bitmap ?? 0,
      auHllBytes: hll ?? 0,
    };
  } finally {
    await redis.call("DEL", ...Object.values(k)).catch(() => undefined);
    redis.close();
  }
}

const isMain = import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  const url = process.argv.slice(2).find((a) => a.startsWith("redis://"));
  const count = Number(
    process.argv
      .slice(2)
      .find((a) => a.startsWith("--ids="))
      ?.slice(6) ?? 100_000,
  );
  let stop = async () => {};
  let target = url ?? process.env.REDIS_URL;
  if (!target) {
    const { startRedis } = await import("../dev/redis.ts");
    const server = await startRedis();
    target = server.url;
    stop = server.stop;
  }
  try {
    const f = await presenceMemory(target, count);
    const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
    console.log(
      `presence memory, ${f.ids} UUIDs (${f.idBytes} bytes each), Redis ${f.redisVersion}, MEMORY USAGE … SAMPLES 0`,
    );
    console.log(
      `  plain sorted set (uuid members)      ${kb(f.plainZsetBytes).padStart(12)}  ${f.plainBytesPerId} B/id`,
    );
    console.log(
      `  mapped sorted set (int members)      ${kb(f.intZsetBytes).padStart(12)}  ${f.intBytesPerId} B/id  (${f.zsetChangePercent} %)`,
    );
    console.log(`  + uuid → int hash                    ${kb(f.idsHashBytes).padStart(12)}`);
    console.log(`  + int → uuid hash                    ${kb(f.namesHashBytes).padStart(12)}`);
    console.log(
      `  mapped total                         ${kb(f.mappedTotalBytes).padStart(12)}  (${f.totalChangePercent} % vs plain)`,
    );
    console.log(
      `  AU today: bitmap over ints (exact)   ${kb(f.auBitmapBytes).padStart(12)};  HyperLogLog ${kb(f.auHllBytes)}`,
    );
  } finally {
    await stop();
  }
}
