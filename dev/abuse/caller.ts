/**
 * The abuse run's HTTP side (../abuse.ts): every request counted by status, and every answer a
 * user would call wrong kept as a problem, each kind once with how often it happened (a broken
 * guard fails hundreds of requests alike).
 */

// Replies are read loosely: a field missing from one is itself a problem the checks report.
export type Json = Record<string, any>;
export interface Reply {
  status: number;
  body: Json;
}

export function caller(url: string) {
  const seen = new Map<string, number>();
  const byStatus: Record<string, number> = {};
  let requests = 0;
  const problem = (text: string) => {
    const kind = text.replace(/\d+/g, "#").slice(0, 160);
    seen.set(kind, (seen.get(kind) ?? 0) + 1);
  };

  async function call(
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply> {
    requests++;
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
    const where = `${method} ${path.slice(0, 120)}`;
    if (res.status >= 500) problem(`${where}: ${res.status} ${text.slice(0, 200)}`);
    if (res.status >= 400) {
      const e = parsed?.error;
      if (typeof e?.code !== "string" || typeof e?.message !== "string")
        problem(`${where}: ${res.status} without the error envelope: ${text.slice(0, 200)}`);
    }
    return { status: res.status, body: parsed as Json };
  }
  const expectStatus = (what: string, res: Reply, ...allowed: number[]) => {
    if (!allowed.includes(res.status))
      problem(`${what}: expected ${allowed.join("|")}, got ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
  };

  return {
    call,
    expectStatus,
    problem,
    byStatus,
    requests: () => requests,
    problems: () => [...seen].map(([p, n]) => (n > 1 ? `${p} (×${n})` : p)),
  };
}

export type Caller = ReturnType<typeof caller>;
