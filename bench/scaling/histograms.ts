/**
 * Issue 15 point 5 for histograms: observe and read by their longest Redis script (SLOWLOG) and
 * commands per call. The number of values observed never enters a script (a day holds counts per
 * bucket); what does is the distinct buckets, capped at MAX_BUCKETS_PER_DAY (5,000) a day and
 * MAX_READ_BUCKETS (20,000) a read. So N here is buckets per day: 50 / 500 / 5,000 (the cap),
 * over all 401 days of a 400-day retention, loaded straight into Redis (day sets, extremes,
 * month rollups; src/histograms/keys.ts) after a PUT through the API.
 *
 * Day d holds buckets [(d mod 4) N, (d mod 4) N + N), so a range of 4 days or more holds 4N
 * distinct buckets: 20,000 at N = 5,000, the read cap. A 30-day read ending today (this month's
 * rollup and the days before it) answers them; a 400-day read has to merge about 43N entries
 * (13 month rollups of 4N and the days before them), more than MAX_UNION_ENTRIES (200,000) at
 * N = 5,000: refused before any union (issue 15, point 3). A second histogram puts every day's
 * buckets apart ([dN, dN + N)): its 400-day read unions 400N distinct buckets, exactly the read
 * cap at N = 50 (answered), and over it at 500 (400N entries: refused by the entries limit) and at
 * 5,000 (one month rollup alone over the cap); the refusals' cost is what those rows measure.
 * Its 39 days ending 30 days ago are the worst read refused by the cap at N = 5,000 (195,000
 * distinct buckets, under the 200,000-entry limit; the days read one by one): before issue 15's
 * probe their union ran before the refusal (~0.3-1.3 s here); now 7 days. sizes and 21 pairs refuse it.
 * A third histogram draws each day's N buckets at random from 6N: its 30 days ending 30 days ago
 * hold ~6N distinct buckets (at N = 5,000, ~29,900: the band whose pairs share too much to prove
 * the cap), refused by a probe of the 7 days the pairs predict over it (before, the union of all 30
 * days: 150,000 entries into ~29,900 buckets, ~50-60 ms here, refused after it); answered at 50 and 500.
 * A 30-day read ending 30 days ago reads its start month's days one by one (no rollup stands for
 * a month that starts before the range), and its end month, when it is the larger part and its
 * days are big, as its rollup less the days after the range (docs/histograms.md, "The end edge of
 * a range ending in the past"; ~40,000 entries instead of 150,000 at N = 5,000; at N = 500 the
 * rollup would save little, so those days are read one by one too). `load` writes each day's sum
 * as observing does, a member `s:<yyyymmdd>` of its month's rollup (before 2026-11-26 it wrote the
 * older layout, a `sum` member in each day, which keeps every day on the one-by-one path).
 *
 * A read of more than 4 days leaves its union in a scratch key for a `ZPOPMIN` sent after its
 * script in the same HTTP request (docs/histograms.md, "The union leaves the script"): the
 * longest script here is the script's; the `ZPOPMIN`, a plain command on a key only that request
 * knows, is counted among the commands, not as a script.
 *
 * Runnable alone: `node bench/run.ts --only=scaling-histograms --no-scenarios --no-rtt --no-cpu --no-jobs`.
 */
import type { RespClient } from "../../dev/resp.ts";
import { histogramKeys } from "../../src/histograms/keys.ts";
import { DAY, dayLabel, dayStart } from "../../src/time.ts";
import { call } from "../lib/measure.ts";
import { scriptProbe } from "./measure.ts";
import type { ScalingInput, Timing } from "./types.ts";
import { mulberry32 } from "../../dev/prng.ts";

const DAYS = 401;
const PIPE = 100;

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** `n` consecutive buckets from `first`. */
const consecutive = (n: number, first: number) => Array.from({ length: n }, (_, i) => first + i);

/** `n` distinct buckets drawn at random from [0, universe), the same on every run for a given `seed`. */
function drawn(n: number, universe: number, seed: number): number[] {
  const next = mulberry32(seed);
  const picked = new Set<number>();
  while (picked.size < n) picked.add(Math.floor(next() * universe));
  return [...picked];
}

/** The buckets `bucketsOf(day number)` on each of the last `days` days (401: every day a 400-day retention keeps). */
async function load(
  redis: RespClient,
  prefix: string,
  name: string,
  today: number,
  bucketsOf: (d: number) => number[],
  days = DAYS,
): Promise<void> {
  const base = histogramKeys.meta(prefix, name);
  // every stored day counts (created before them) and rollups cover every month
  await redis.call("HSET", base, "createdAt", today - DAYS * DAY, "rollupsSince", 0);
  let batch: (string | number)[][] = [];
  const months = new Map<string, string[]>();
  const sums = new Map<string, (string | number)[]>();
  for (let d = 0; d < days; d++) {
    const day = today - d * DAY;
    const indexes = bucketsOf(d);
    const n = indexes.length;
    const first = Math.min(...indexes);
    const last = Math.max(...indexes);
    const buckets: (string | number)[] = [];
    indexes.forEach((b, i) => buckets.push(1 + (i % 9), b));
    const dayKey = histogramKeys.day(prefix, name, day);
    const month = histogramKeys.month(prefix, name, day);
    batch.push(
      ["ZADD", dayKey, ...buckets],
      ["ZADD", histogramKeys.ext(prefix, name, day), last, "max", -first, "min"],
    );
    months.set(month, [...(months.get(month) ?? []), dayKey]);
    sums.set(month, [...(sums.get(month) ?? []), n * 5 * (last + 1), `s:${dayLabel(day)}`]);
    if (batch.length >= PIPE) {
      await redis.pipeline(batch);
      batch = [];
    }
  }
  // each month's rollup: the sum of its days, and each day's sum as its member s:<yyyymmdd>, as observing writes them
  for (const [month, days] of months) batch.push(["ZUNIONSTORE", month, days.length, ...days]);
  for (const [month, pairs] of sums) batch.push(["ZADD", month, ...pairs]);
  await redis.pipeline(batch);
}

export async function histogramScaling(input: ScalingInput): Promise<{ timings: Timing[]; notes: string[] }> {
  const { redis, side, prefix, log } = input;
  const probe = scriptProbe(input, "histograms");
  const ok = async (method: string, path: string, body?: unknown) => {
    const r = await call(side, method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
    return r.json;
  };
  const today = dayStart(Date.now());
  const range = `from=${iso(today - 399 * DAY)}&to=${iso(today)}`;
  const month = `from=${iso(today - 29 * DAY)}&to=${iso(today)}`;
  const pastMonth = `from=${iso(today - 59 * DAY)}&to=${iso(today - 30 * DAY)}`;
  // 39 days ending 30 days ago: the most days of 5,000 buckets under the 200,000-entry limit
  const pastEdges = `from=${iso(today - 68 * DAY)}&to=${iso(today - 30 * DAY)}`;
  const summary = (j: any) =>
    j?.error
      ? String(j.error.code ?? j.error.message ?? "").slice(0, 80)
      : `count=${j?.count} buckets=${j?.buckets?.length}`;

  // the scripts once, unmeasured: no NOSCRIPT fallback in the first size's figures
  await ok("PUT", "/v1/histograms/scale-hw", { bucketWidth: 1, retentionDays: 400 });
  await ok("POST", "/v1/histograms/scale-hw/observations", { value: 1 });
  await ok("GET", `/v1/histograms/scale-hw?${range}`);
  await ok("DELETE", "/v1/histograms/scale-hw");

  for (const n of input.sizes) {
    const name = `scale-h-${n}`;
    const wide = `scale-hx-${n}`;
    const base = `/v1/histograms/${name}`;
    const measure = (
      label: string,
      path: string,
      method = "GET",
      describe?: (j: any) => string,
      body?: unknown,
      accept: number[] = [],
    ) =>
      probe.measure(n, `histogram (N buckets a day): ${label}`, path, {
        method,
        describe,
        body,
        accept,
        // reads 3 times (the median counts), refused or not (a refusal is sized before any union: cheap)
        repeat: method === "GET" ? 3 : 1,
      });

    log(`histograms N=${n} buckets a day: loading 401 days`);
    await ok("PUT", base, { bucketWidth: 1, retentionDays: 400 });
    await load(redis, prefix, name, today, (d) => consecutive(n, (d % 4) * n));
    // today is day 0: buckets [0, n); at n = 5,000 the day is at the cap
    await measure("observe one value, existing bucket", `${base}/observations`, "POST", undefined, { value: n >> 1 });
    await measure("observe 1,000 values, existing buckets", `${base}/observations`, "POST", undefined, {
      values: Array.from({ length: 1000 }, (_, i) => (i * 7) % n),
    });
    await measure(
      "observe one value, new bucket (refused once a day holds 5,000)",
      `${base}/observations`,
      "POST",
      (j) => (j?.error ? String(j.error.code ?? "") : "accepted"),
      { value: 4 * n + 1 },
      [400],
    );
    await measure("read today (one day)", base, "GET", summary);
    await measure(
      "read 30 days ending today (4N distinct buckets: the read cap at 5,000)",
      `${base}?${month}`,
      "GET",
      summary,
    );
    await measure(
      "read 30 days ending 30 days ago (days one by one: 30N entries, 4N distinct buckets)",
      `${base}?${pastMonth}`,
      "GET",
      summary,
    );
    await measure(
      "read 400 days (4N distinct buckets; ~43N entries to merge, refused before any union over 200,000)",
      `${base}?${range}`,
      "GET",
      summary,
      undefined,
      [400],
    );

    log(`histograms N=${n}: a histogram whose days hold disjoint buckets`);
    await ok("PUT", `/v1/histograms/${wide}`, { bucketWidth: 1, retentionDays: 400 });
    await load(redis, prefix, wide, today, (d) => consecutive(n, d * n));
    await measure(
      "read 400 days of disjoint buckets (400N distinct: the read cap at 50; refused before any union over it)",
      `/v1/histograms/${wide}?${range}`,
      "GET",
      summary,
      undefined,
      [400],
    );
    await measure(
      "read 39 days ending 30 days ago of disjoint buckets (39N distinct: refused at 5,000 by the days' sizes and pairs, before any union)",
      `/v1/histograms/${wide}?${pastEdges}`,
      "GET",
      summary,
      undefined,
      [400],
    );
    log(`histograms N=${n}: a histogram whose days draw their buckets at random from 6N`);
    const random = `scale-hr-${n}`;
    await ok("PUT", `/v1/histograms/${random}`, { bucketWidth: 1, retentionDays: 400 });
    // the 70 days up to 30 days ago (read: the 30 of them ending 30 days ago)
    await load(redis, prefix, random, today, (d) => drawn(n, 6 * n, d + 1), 70);
    await measure(
      "read 30 days ending 30 days ago of buckets drawn at random from 6N (~6N distinct: at 5,000, 29,900, which the pairs cannot prove; refused by a probe of 7 days they predict over the cap)",
      `/v1/histograms/${random}?${pastMonth}`,
      "GET",
      summary,
      undefined,
      [400],
    );
    await measure("delete (admin)", base, "DELETE");
    await ok("DELETE", `/v1/histograms/${wide}`);
    await ok("DELETE", `/v1/histograms/${random}`);
  }
  probe.print();
  return {
    timings: probe.timings(),
    notes: [
      "Histograms (`--only=scaling-histograms`): N = distinct buckets a day over 401 stored days (the driver; values observed never are), up to the 5,000-a-day cap. A read of more than 4 days sizes its calendar keys (month rollups, this month's up to today, and the days before) with one `ZCARD` each before any union, and is refused (400) when one month rollup alone holds more than the 20,000-bucket read cap, the keys hold more than 200,000 entries (`MAX_UNION_ENTRIES`), or its largest parts together pass the cap and share no bucket; a 30-day read at N = 5,000 and a 400-day read of disjoint buckets at N = 50 return 20,000 buckets, the read cap. Such a read unions into a scratch key of its own and leaves it to a `ZPOPMIN` sent after the script in the same HTTP request (its commands count here; the longest script is the script alone).",
    ],
  };
}
