/**
 * Raw access to the local Upstash server from any runtime (Node or workerd):
 * key inspection, cleanup and the per-tag request counters. Throws a clear
 * message when the test stack is missing instead of skipping.
 */
export interface RestTarget {
  url: string;
  token: string;
}

export function requireTarget(url: string | undefined, token: string | undefined): RestTarget {
  if (!url || !token) {
    throw new Error(
      "The local Upstash server is not configured (EDGESTATS_UPSTASH_URL / EDGESTATS_UPSTASH_TOKEN). " +
        "Run the tests with `npm test`, which starts redis-server and the local Upstash server.",
    );
  }
  return { url, token };
}

export async function command<T = unknown>(target: RestTarget, ...args: (string | number)[]): Promise<T> {
  const res = await fetch(target.url, {
    method: "POST",
    headers: { authorization: `Bearer ${target.token}`, "content-type": "application/json" },
    body: JSON.stringify(args.map(String)),
  });
  const body = (await res.json()) as { result?: T; error?: string };
  if (!res.ok || body.error) throw new Error(`redis ${args[0]}: ${body.error ?? res.status}`);
  return body.result as T;
}

/** Every key under `prefix:` (SCAN, fine for test-sized keyspaces). */
export async function keysUnder(target: RestTarget, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await command<[string, string[]]>(
      target,
      "SCAN",
      cursor,
      "MATCH",
      `${prefix}:*`,
      "COUNT",
      1000,
    );
    cursor = String(next);
    keys.push(...batch);
  } while (cursor !== "0");
  return keys.sort();
}

export async function deleteUnder(target: RestTarget, prefix: string): Promise<void> {
  const keys = await keysUnder(target, prefix);
  for (let i = 0; i < keys.length; i += 500) await command(target, "DEL", ...keys.slice(i, i + 500));
}

export interface TagStats {
  requests: number;
  commands: number;
  byCommand: Record<string, number>;
}

/** Requests and commands the local server served for tokens `<token>.<tag>`. */
export async function statsOf(target: RestTarget, tag: string): Promise<TagStats> {
  const res = await fetch(`${target.url}/__local/stats?tag=${encodeURIComponent(tag)}`, {
    headers: { authorization: `Bearer ${target.token}` },
  });
  if (!res.ok) throw new Error(`stats: ${res.status} ${await res.text()}`);
  return (await res.json()) as TagStats;
}

export async function resetStats(target: RestTarget, tag: string): Promise<void> {
  await fetch(`${target.url}/__local/reset?tag=${encodeURIComponent(tag)}`, {
    method: "POST",
    headers: { authorization: `Bearer ${target.token}` },
  });
}

/** A unique, valid key prefix for one test file or test. */
export function uniquePrefix(label: string): string {
  const clean = label.replace(/[^A-Za-z0-9_.-]/g, "").slice(0, 12) || "t";
  return `t-${clean}-${Math.random().toString(36).slice(2, 10)}`;
}
