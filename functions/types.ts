import type { Config } from "../src/config.ts";
import type { Ctx } from "../src/context.ts";
import type { Idempotency } from "../src/redis/script.ts";

/** Hono environment of the app: Worker bindings plus per-request values set by middleware. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** The request's time (epoch ms); tests inject a fake clock through createApp({ now }). */
    now: number;
    config: Config;
    /** Library context: Redis client, key prefix, now. Created lazily by `ctxOf`. */
    ctx: Ctx;
    /** Scopes the presented API key holds. */
    scopes: ReadonlySet<Scope>;
    /**
     * A short, non-secret id of the API key (for rate limiting and idempotency records): a
     * function, as it is a digest made only when a request first needs it (once per key and isolate).
     */
    keyId: () => Promise<string>;
    /**
     * The JSON body as the body guard parsed it (functions/middleware/body.ts), once; unset without
     * a body. Read only: the validator and the idempotency digest share it.
     */
    body: unknown;
    /** Set when the request carries an Idempotency-Key. */
    idempotency: Idempotency | undefined;
    requestId: string;
    /**
     * Set on /internal/* when a QStash signature came again (./middleware/qstash.ts): the job route
     * answers it as a replay and runs nothing.
     */
    signatureReplayed: boolean;
  };
}

export type Scope = "read" | "ingest" | "admin";
