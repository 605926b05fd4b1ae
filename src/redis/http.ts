/**
 * The library's own Upstash REST client (`createRedis`): the few commands it sends, over the same
 * HTTP requests as `@upstash/redis` 1.39 sends with `createRedis`'s settings (no retries, replies
 * as sent, no auto-pipelining, no telemetry, `responseEncoding: false`, a fresh timeout signal per
 * request, the read-your-writes sync token carried from one reply to the next request). Its
 * `Redis` class defines ~360 commands: ~76 KB of code (~16 KiB of gzip) that every cold isolate of
 * the Worker compiled for the four it uses (issue 14, point 6). Errors keep that client's classes'
 * names and messages, which src/redis/storage-errors.ts reads (`UpstashError`, NOSCRIPT), and an
 * error reply's HTTP status besides.
 */

/** An error reply of Upstash or Redis (same name and message as `errors.UpstashError` of @upstash/redis). */
export class UpstashError extends Error {
  /**
   * The HTTP status of a reply that was not a 2xx (400: Redis's own error; 401: the token; 5xx: a
   * gateway), which src/redis/storage-errors.ts reads; absent for a command's error inside a 200.
   */
  readonly status?: number;
  constructor(message: string, options?: ErrorOptions & { status?: number }) {
    super(message, options);
    this.name = "UpstashError";
    if (options?.status !== undefined) this.status = options.status;
  }
}

/** A reply body that is not JSON (a proxy's error page, a cut body). */
export class UpstashJSONParseError extends UpstashError {
  constructor(body: string, options?: ErrorOptions) {
    super(`Unable to parse response body: ${body.length > 200 ? `${body.slice(0, 200)}...` : body}`, options);
    this.name = "UpstashJSONParseError";
  }
}

/**
 * The reply body of a database that passed MAX_REPLY_BYTES: the client stopped reading it (a
 * reply whose whole text would be kept in memory twice over, as text and parsed, could take the
 * isolate's 128 MB). The command ran; only its reply is lost.
 */
export class UpstashReplyTooLarge extends UpstashError {
  constructor(bytes: number) {
    super(`The reply passed ${MAX_REPLY_BYTES} bytes (${bytes} read or announced); it was not read further`);
    this.name = "UpstashReplyTooLarge";
  }
}

/**
 * Upstash's max request size (10 MB on its Free and Pay-as-you-go plans, in bytes:
 * upstash.com/docs/redis/troubleshooting/max_request_size_exceeded), past which it answers
 * `ERR max request size exceeded. Limit: 10485760 bytes, Actual: <n> bytes`.
 */
export const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

/**
 * The largest reply body read, in bytes. The API's largest legal reply is 10,320,022 bytes: a counter's
 * `sorted` list of its 10,000 members (MAX_SORTED_MEMBERS) of 256 bytes each, every one a byte that
 * cjson and then the REST reply's JSON escape (`"`: 4 bytes on the wire),
 * test/redis/fixclient-limits.test.ts measures it; the bound is over three times that, and only stops a
 * reply nothing of ours asks for before it fills the isolate's 128 MB.
 */
export const MAX_REPLY_BYTES = 32 * 1024 * 1024;

type Arg = string | number;
type Reply = { result?: unknown; error?: string };

export interface HttpClientOptions {
  url: string;
  token: string;
  /** Called once per request (once per call with `HttpRedis.oneDeadline`): each signal bounds what shares it. */
  signal: () => AbortSignal;
}

/** One database: its URL, headers and the last sync token Upstash sent (read-your-writes). */
export class UpstashHttp {
  readonly #url: string;
  readonly #headers: Record<string, string>;
  readonly #signal: () => AbortSignal;

  /** `headers`: another instance's (`withOneSignal`), so both carry the same sync token. */
  constructor(options: HttpClientOptions, headers?: Record<string, string>) {
    this.#url = options.url.replace(/\/$/, "");
    // @upstash/redis refuses such a URL in its constructor, before any request
    if (this.#url && !/^https?:\/\/[^\s#$./?].\S*$/.test(this.#url))
      throw Object.assign(
        new Error(
          `Upstash Redis client was passed an invalid URL. You should pass a URL starting with https. Received: "${this.#url}". `,
        ),
        { name: "UrlError" },
      );
    this.#headers = headers ?? {
      "Content-Type": "application/json",
      authorization: `Bearer ${options.token}`,
      "upstash-sync-token": "",
    };
    this.#signal = options.signal;
  }

  /** The same database, its requests sharing one signal made now: one deadline for all of them. */
  withOneSignal(): UpstashHttp {
    const signal = this.#signal();
    return new UpstashHttp({ url: this.#url, token: "", signal: () => signal }, this.#headers);
  }

  /** POSTs `body` to the URL (one command) or its `/pipeline`; returns the parsed reply body. */
  async request(body: Arg[] | Arg[][], pipeline: boolean): Promise<unknown> {
    const text = JSON.stringify(body);
    // at most 3 UTF-8 bytes per UTF-16 unit: only a body that long can hold a command over the limit
    if (text.length * 3 > MAX_REQUEST_BYTES) refuseOversize(pipeline ? (body as Arg[][]) : [body as Arg[]]);
    const res = await fetch(pipeline ? `${this.#url}/pipeline` : this.#url, {
      method: "POST",
      headers: { ...this.#headers },
      body: text,
      keepalive: true,
      signal: this.#signal(),
    });
    // taken before the body is read, as @upstash/redis does: a 200 ran the command, so the next
    // request waits for it on a replica even when this body is cut
    if (res.ok) this.#headers["upstash-sync-token"] = res.headers.get("upstash-sync-token") ?? "";
    const reply = await readCapped(res);
    let parsed: unknown;
    try {
      parsed = JSON.parse(reply);
    } catch (error) {
      throw new UpstashJSONParseError(reply, { cause: error });
    }
    if (!res.ok)
      throw new UpstashError(`${(parsed as Reply | null)?.error}, command was: ${JSON.stringify(body)}`, {
        status: res.status,
      });
    return parsed;
  }

  /** Sends one command; its reply as sent, or an UpstashError with Redis's error text. */
  async command(args: Arg[]): Promise<unknown> {
    const { result, error } = (await this.request(args, false)) as Reply;
    if (error) throw new UpstashError(error);
    if (result === undefined) throw new TypeError("Request did not return a result");
    return result;
  }
}

/**
 * Throws Upstash's own error, before sending, for a request of which one command's arguments alone
 * pass MAX_REQUEST_BYTES: however Upstash measures a request (its JSON, or the command it becomes),
 * it is over. A request under that but over in Upstash's measure is sent, and refused by Upstash
 * with the same text, which src/redis/storage-errors.ts reads.
 */
function refuseOversize(commands: Arg[][]): void {
  const encoder = new TextEncoder();
  for (const command of commands) {
    let bytes = 0;
    for (const arg of command) bytes += typeof arg === "number" ? String(arg).length : encoder.encode(arg).length;
    if (bytes > MAX_REQUEST_BYTES)
      throw new UpstashError(
        `ERR max request size exceeded. Limit: ${MAX_REQUEST_BYTES} bytes, Actual: ${bytes} bytes (refused by the client, not sent)`,
      );
  }
}

/**
 * A reply's body as text, read chunk by chunk and given up past MAX_REPLY_BYTES (or at once when
 * its Content-Length says so), instead of `res.text()`, which reads whatever comes. The request's
 * signal still bounds the reading in time.
 */
async function readCapped(res: Response): Promise<string> {
  const announced = Number(res.headers.get("content-length") ?? 0);
  if (announced > MAX_REPLY_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    throw new UpstashReplyTooLarge(announced);
  }
  if (!res.body) return "";
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    bytes += value.byteLength;
    if (bytes > MAX_REPLY_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new UpstashReplyTooLarge(bytes);
    }
    text += decoder.decode(value, { stream: true });
  }
}

/** EVAL / EVALSHA's arguments as @upstash/redis sends them: the key count as a number. */
export function scriptArgs(name: string, script: string, keys: string[], args: Arg[] = []): Arg[] {
  return [name, script, keys.length, ...keys, ...args];
}

/**
 * A pipeline (`/pipeline`: one HTTP request, in order, not atomic) of the commands the library
 * and its checks send after a script; replies as sent, errors per command as @upstash/redis's.
 */
export class HttpPipeline {
  readonly #http: UpstashHttp;
  readonly #commands: Arg[][] = [];

  constructor(http: UpstashHttp) {
    this.#http = http;
  }

  #push(command: Arg[]): this {
    this.#commands.push(command);
    return this;
  }

  eval(script: string, keys: string[], args?: Arg[]): this {
    return this.#push(scriptArgs("eval", script, keys, args));
  }
  evalsha(sha: string, keys: string[], args?: Arg[]): this {
    return this.#push(scriptArgs("evalsha", sha, keys, args));
  }
  scriptLoad(script: string): this {
    return this.#push(["script", "load", script]);
  }
  zpopmin(key: string, count?: number): this {
    return this.#push(typeof count === "number" ? ["zpopmin", key, count] : ["zpopmin", key]);
  }
  incrby(key: string, by: number): this {
    return this.#push(["incrby", key, by]);
  }
  exists(...keys: string[]): this {
    return this.#push(["exists", ...keys]);
  }
  ping(message?: string): this {
    return this.#push(message === undefined ? ["ping"] : ["ping", message]);
  }

  /** Sends the pipeline: the replies in order; with `keepErrors`, `{ error, result }` each instead of throwing. */
  async exec(options?: { keepErrors?: boolean }): Promise<unknown[]> {
    if (this.#commands.length === 0) throw new Error("Pipeline is empty");
    const replies = (await this.#http.request(this.#commands, true)) as Reply[];
    // a cut or rewritten answer that still parses: its missing replies would read as `undefined`
    if (!Array.isArray(replies) || replies.length !== this.#commands.length)
      throw new UpstashError(
        `Pipeline answered ${Array.isArray(replies) ? replies.length : "no list of"} replies for ${this.#commands.length} commands`,
      );
    if (options?.keepErrors) return replies.map(({ error, result }) => ({ error, result }));
    return replies.map(({ error, result }, i) => {
      if (error) throw new UpstashError(`Command ${i + 1} [ ${this.#commands[i]![0]} ] failed: ${error}`);
      return result;
    });
  }
}

/** The client: EVALSHA, EVAL, PING and pipelines, each call one HTTP request. */
export class HttpRedis {
  readonly #http: UpstashHttp;

  constructor(options: HttpClientOptions | UpstashHttp) {
    this.#http = options instanceof UpstashHttp ? options : new UpstashHttp(options);
  }

  /**
   * Whether `x` is this class's own object: a brand check, not `instanceof`, which a Proxy or an
   * `Object.create` wrapper of a client passes while lacking its private fields (and whose hooks
   * `oneDeadline` would bypass).
   */
  static isOwn(x: unknown): x is HttpRedis {
    return typeof x === "object" && x !== null && #http in x;
  }

  /**
   * This client for one call of several requests (EVALSHA, then EVAL after NOSCRIPT: run.ts): they
   * share one signal made now, so the call as a whole gets one timeout, not one per request.
   */
  oneDeadline(): HttpRedis {
    return new HttpRedis(this.#http.withOneSignal());
  }

  evalsha(sha: string, keys: string[], args?: Arg[]): Promise<unknown> {
    return this.#http.command(scriptArgs("evalsha", sha, keys, args));
  }
  eval(script: string, keys: string[], args?: Arg[]): Promise<unknown> {
    return this.#http.command(scriptArgs("eval", script, keys, args));
  }
  ping(message?: string): Promise<unknown> {
    return this.#http.command(message === undefined ? ["ping"] : ["ping", message]);
  }
  pipeline(): HttpPipeline {
    return new HttpPipeline(this.#http);
  }
}
