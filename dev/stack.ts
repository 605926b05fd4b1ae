import { startRedis, type RedisServer } from "./redis.ts";
import { startUpstashServer, type UpstashServer } from "./upstash-server.ts";

export interface Stack {
  redisUrl: string;
  upstash: UpstashServer;
  token: string;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** Persist Redis data here (AOF); omit for a throwaway Redis. */
  dataDir?: string;
  /** @default "local-token" */
  token?: string;
  /** Port of the local Upstash server. @default a free port */
  upstashPort?: number;
}

/**
 * Redis (ours, unless REDIS_URL names one) plus the local Upstash REST server
 * in front of it: what `npm run dev`, `npm test` and the benchmarks run on.
 */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  let redis: RedisServer | undefined;
  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    redis = await startRedis(options.dataDir ? { dataDir: options.dataDir } : {});
    redisUrl = redis.url;
  }
  const token = options.token ?? "local-token";
  const upstash = await startUpstashServer({
    redisUrl,
    token,
    ...(options.upstashPort ? { port: options.upstashPort } : {}),
  });
  return {
    redisUrl,
    upstash,
    token,
    async stop() {
      await upstash.close();
      await redis?.stop();
    },
  };
}
