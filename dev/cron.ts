/**
 * Just enough cron to fire wrangler.toml's triggers locally: five fields with
 * `*`, numbers, lists, ranges and steps, matched in UTC like Cloudflare does.
 */
function field(spec: string, min: number, max: number): Set<number> {
  const out = new Set<number>();
  for (const part of spec.split(",")) {
    const [range = "*", stepText] = part.split("/");
    const step = stepText ? Number(stepText) : 1;
    const [lo, hi] =
      range === "*"
        ? [min, max]
        : range.includes("-")
          ? range.split("-").map(Number)
          : [Number(range), stepText ? max : Number(range)];
    for (let v = lo ?? min; v <= (hi ?? max); v += step) out.add(v);
  }
  return out;
}

export function cronMatches(expression: string, date: Date): boolean {
  const [m = "*", h = "*", dom = "*", mon = "*", dow = "*"] = expression.trim().split(/\s+/);
  return (
    field(m, 0, 59).has(date.getUTCMinutes()) &&
    field(h, 0, 23).has(date.getUTCHours()) &&
    field(dom, 1, 31).has(date.getUTCDate()) &&
    field(mon, 1, 12).has(date.getUTCMonth() + 1) &&
    field(dow, 0, 6).has(date.getUTCDay())
  );
}

export class CronSchedule {
  readonly expressions: string[];
  #lastMinute = -1;
  constructor(wranglerToml: string) {
    const match = /crons\s*=\s*\[([^\]]*)\]/.exec(wranglerToml);
    this.expressions = match?.[1] ? [...match[1].matchAll(/"([^"]+)"/g)].map((m) => m[1] ?? "") : [];
  }
  /** The expressions due in this minute, each returned once per minute. */
  due(date: Date): string[] {
    const minute = Math.floor(date.getTime() / 60_000);
    if (minute === this.#lastMinute) return [];
    this.#lastMinute = minute;
    return this.expressions.filter((e) => cronMatches(e, date));
  }
}
