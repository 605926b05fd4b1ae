/**
 * A small RESP2 client for the local tooling (the local Upstash server, the
 * benchmark loaders): pipelined, binary-safe (bulk strings are Buffers), with
 * an incremental parser so a reply of millions of elements is read in one pass.
 */
import { connect, type Socket } from "node:net";

/** An error reply from Redis (`-ERR ...`). Returned, not thrown, inside arrays. */
export class ReplyError extends Error {
  override name = "ReplyError";
}

/** Bulk strings are Buffers, simple strings strings, integers numbers, nil null. */
export type Reply = Buffer | string | number | null | ReplyError | Reply[];

export type Arg = string | number | Buffer;

export function encodeCommand(args: Arg[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg));
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

interface Frame {
  remaining: number;
  items: Reply[];
}

/** Incremental RESP2 parser: feed chunks, get complete replies in order. */
export class RespParser {
  #buffer = Buffer.alloc(0);
  #offset = 0;
  #stack: Frame[] = [];
  // A bulk string of many MB arrives in many socket chunks: they wait here until
  // the element can be complete (#need bytes), so the buffer is joined once
  // instead of once per chunk (quadratic in the reply's size).
  #parked: Buffer[] = [];
  #parkedBytes = 0;
  #need = 0;

  feed(chunk: Buffer, onReply: (reply: Reply) => void): void {
    this.#parked.push(chunk);
    this.#parkedBytes += chunk.length;
    if (this.#buffer.length - this.#offset + this.#parkedBytes < this.#need) return;
    this.#buffer = Buffer.concat([this.#buffer.subarray(this.#offset), ...this.#parked]);
    this.#parked = [];
    this.#parkedBytes = 0;
    this.#offset = 0;
    this.#need = 0;
    for (;;) {
      const value = this.#element();
      if (value === undefined) return;
      let done: Reply | undefined = value;
      // Fold completed values into their enclosing arrays.
      while (done !== undefined) {
        const top = this.#stack[this.#stack.length - 1];
        if (!top) {
          onReply(done);
          break;
        }
        top.items.push(done);
        top.remaining--;
        if (top.remaining === 0) {
          this.#stack.pop();
          done = top.items;
        } else done = undefined;
      }
    }
  }

  /** One element at the current offset: a value, `undefined` when incomplete, or an opened array (returns undefined after pushing a frame, then continues). */
  #element(): Reply | undefined {
    for (;;) {
      const buf = this.#buffer;
      const lineEnd = buf.indexOf("\r\n", this.#offset, "latin1");
      if (lineEnd < 0) {
        this.#need = buf.length - this.#offset + 1;
        return undefined;
      }
      const type = buf[this.#offset];
      const line = buf.toString("utf8", this.#offset + 1, lineEnd);
      switch (type) {
        case 43: // +
          this.#offset = lineEnd + 2;
          return line;
        case 45: // -
          this.#offset = lineEnd + 2;
          return new ReplyError(line);
        case 58: // :
          this.#offset = lineEnd + 2;
          return Number(line);
        case 36: {
          // $
          const len = Number(line);
          if (len < 0) {
            this.#offset = lineEnd + 2;
            return null;
          }
          if (buf.length < lineEnd + 2 + len + 2) {
            this.#need = lineEnd + 2 + len + 2 - this.#offset;
            return undefined;
          }
          const value = Buffer.from(buf.subarray(lineEnd + 2, lineEnd + 2 + len));
          this.#offset = lineEnd + 2 + len + 2;
          return value;
        }
        case 42: {
          // *
          const len = Number(line);
          this.#offset = lineEnd + 2;
          if (len < 0) return null;
          if (len === 0) return [];
          this.#stack.push({ remaining: len, items: [] });
          continue; // read the first element of the array
        }
        default:
          throw new Error(`RESP: unexpected byte ${type} in reply`);
      }
    }
  }
}

export interface RespClient {
  /** Sends one command; resolves with its reply, rejects with the ReplyError of an error reply. */
  call(...args: Arg[]): Promise<Reply>;
  /** Sends several commands in one write; their replies in order (error replies as ReplyError values). */
  pipeline(commands: Arg[][]): Promise<Reply[]>;
  close(): void;
  readonly closed: boolean;
}

/** Opens a connection to `redis://host:port`. Rejects pending calls if the connection drops. */
export function connectResp(url: string): Promise<RespClient> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port || 6379), hostname || "127.0.0.1");
    socket.setNoDelay(true);
    const parser = new RespParser();
    const pending: { ok: (r: Reply) => void; fail: (e: Error) => void }[] = [];
    let closed = false;
    let connected = false;
    const failAll = (error: Error) => {
      closed = true;
      for (const p of pending.splice(0)) p.fail(error);
    };
    socket.on("data", (chunk) => {
      try {
        parser.feed(chunk, (reply) => pending.shift()?.ok(reply));
      } catch (error) {
        socket.destroy();
        failAll(error as Error);
      }
    });
    socket.on("error", (error) => {
      failAll(error);
      if (!connected) reject(error);
    });
    socket.on("close", () => failAll(new Error("Redis connection closed")));
    socket.once("connect", () => {
      connected = true;
      const client: RespClient = {
        get closed() {
          return closed;
        },
        call(...args) {
          return client.pipeline([args]).then((replies) => {
            const reply = replies[0] ?? null;
            if (reply instanceof ReplyError) throw reply;
            return reply;
          });
        },
        pipeline(commands) {
          if (closed) return Promise.reject(new Error("Redis connection closed"));
          const replies = commands.map(() => new Promise<Reply>((ok, fail) => pending.push({ ok, fail })));
          socket.write(Buffer.concat(commands.map(encodeCommand)));
          return Promise.all(replies);
        },
        close() {
          closed = true;
          socket.end();
        },
      };
      resolve(client);
    });
  });
}
