import type { RedisClient } from "./redis/client.ts";

/**
 * What every library function takes first: the Redis client, the key prefix
 * of this deployment and the time of the request (epoch ms; injected so tests
 * can move the clock, and passed into scripts so Redis never reads its own).
 */
export interface Ctx {
  redis: RedisClient;
  /** @default "es" */
  prefix: string;
  now: number;
}
