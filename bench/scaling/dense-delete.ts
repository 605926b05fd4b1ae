/**
 * Issue 15, dense member deletes: the longest Redis script (SLOWLOG, slowlog-log-slower-than 0)
 * and the commands of a member delete where the member is in every key of the range: a 400-day
 * `period=day` range (400 day buckets, 14 month rollups) at N members a day key, and a 60-day
 * `period=hour` range (1,440 hours, 240 quarters, 60 days, 3 months: every key one call may
 * change) at N members an hour key. The counter is written by the library (exact index fields and
 * rollups, the victims in every key), then each key is padded with N other members (one
 * ZUNIONSTORE with a template), so the sorted sets are skiplists of realistic size.
 *
 * `node bench/scaling/dense-delete.ts day:10000 day:100000 hour:1000 hour:10000`
 */
import { connectResp, type RespClient } from "../../dev/resp.ts";
import { startStack } from "../../dev/stack.ts";
import type { Ctx } from "../../src/context.ts";
import * as counters from "../../src/counters/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR } from "../../src/time.ts";

const NOW = Date.UTC(2026, 10, 22, 12, 30);
const VICTIMS = 6;

async function slowest(redis: RespClient, run: () => Promise<unknown>): Promise<number> {
  await redis.call("SLOWLOG", "RESET");
  await run();
  const log = (await redis.call("SLOWLOG", "GET", 1000)) as [number, number, number, Buffer[]][];
  let worst = 0;
  for (const entry of log) {
    const name = String(entry[3]?.[0] ?? "").toUpperCase();
    if (name.startsWith("EVAL")) worst = Math.max(worst, Number(entry[2]));
  }
  return worst / 1000;
}

const args = process.argv.slice(2);
const stack = await startStack();
const redis = await connectResp(stack.redisUrl);
const lib = createRedis({ url: stack.upstash.url, token: `${stack.token}.dense`, timeoutMs: 600_000 });
const ctx: Ctx = { redis: lib, prefix: "bench", now: NOW };
const rows: string[] = [];
try {
  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", 0);
  await redis.call("CONFIG", "SET", "slowlog-max-len", 1000);
  for (const arg of args) {
    const [period, size] = arg.split(":") as ["day" | "hour", string];
    const n = Number(size);
    const name = `dense-${period}-${n}`;
    const unit = period === "day" ? DAY : HOUR;
    const from = period === "day" ? Date.UTC(2025, 9, 19) : Date.UTC(2026, 8, 21, 17);
    const count = period === "day" ? 399 : 1440;
    const to = from + (count - 1) * unit;
    const items = [];
    for (let i = 0; i < count; i++)
      for (let v = 0; v < VICTIMS; v++) items.push({ member: `v${v}`, period, at: from + i * unit + 60_000 });
    for (let i = 0; i < items.length; i += 1000) await counters.increment(ctx, name, items.slice(i, i + 1000));
    // pad every bucket and rollup with n other members
    const template = `bench:template:${n}`;
    if (!(await redis.call("EXISTS", template))) {
      for (let i = 0; i < n; i += 10_000) {
        const chunk: (string | number)[] = [];
        for (let j = i; j < Math.min(n, i + 10_000); j++) chunk.push(1 + (j % 5), `member-${j}`);
        await redis.call("ZADD", template, ...chunk);
      }
    }
    const fields = (await redis.call("HKEYS", `bench:counters:${name}:index`)) as Buffer[];
    const keys = fields
      .map(String)
      .filter((f) => f.startsWith("b:"))
      .map((f) => f.slice(2));
    for (let i = 0; i < keys.length; i += 50)
      await redis.pipeline(keys.slice(i, i + 50).map((k) => ["ZUNIONSTORE", k, 2, k, template]));
    const card = Number(await redis.call("ZCARD", keys[0]!));
    console.log(`${arg}: ${keys.length} keys of ~${card} members`);
    const range = { period, from, to };
    const times: number[] = [];
    let commands = 0;
    for (let v = 0; v < VICTIMS; v++) {
      stack.upstash.reset("dense");
      const ms = await slowest(redis, () => counters.deleteMember(ctx, name, `v${v}`, range));
      commands = stack.upstash.stats("dense").commands;
      if (v > 0) times.push(ms); // the first loads the script
      console.log(`  v${v}: ${ms.toFixed(2)} ms, ${commands} commands`);
    }
    times.sort((a, b) => a - b);
    rows.push(
      `| ${period} | ${count} | ${n} | ${keys.length} | ${commands} | ${times[2]!.toFixed(1)} | ${times[times.length - 1]!.toFixed(1)} |`,
    );
    await redis.call("FLUSHALL");
  }
  console.log("| period | buckets | N | keys | commands | median ms | max ms |\n|---|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) console.log(r);
} finally {
  redis.close();
  await stack.stop();
}
