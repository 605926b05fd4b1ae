/** Serves the naive baseline over node:http on loopback, in the bench's own process. */
import { createServer } from "node:http";
import { freePort } from "../../dev/redis.ts";
import { createNaive, type NaiveOptions } from "./naive.ts";

export interface NaiveServer {
  url: string;
  close(): Promise<void>;
}

export async function startNaive(options: NaiveOptions): Promise<NaiveServer> {
  const handle = createNaive(options);
  const port = await freePort();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const request = new Request(`http://127.0.0.1:${port}${req.url ?? "/"}`, {
      method: req.method ?? "GET",
      headers: { "content-type": "application/json" },
      ...(body && req.method !== "GET" ? { body } : {}),
    });
    const response = await handle(request);
    const text = await response.text();
    res.writeHead(response.status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((ok) => server.listen(port, "127.0.0.1", ok));
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
