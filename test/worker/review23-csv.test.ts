/**
 * Review 23: CSV over /openapi.json. Every GET whose 200 JSON answer holds a top-level array is a
 * list and must offer text/csv (API.md v2: "Every GET that returns a list"), with columns that are
 * fields of the array's items; and the signals lists (rising, history) as CSV equal their JSON.
 */
import { afterAll, describe, expect, it } from "vitest";
import { CSV_LISTS } from "../../functions/csv.ts";
import { parseCsv } from "../helpers/csv.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "rv23-csv", start: Date.UTC(2026, 10, 28, 9, 30) });
afterAll(() => api.cleanup());
const CSV = { headers: { accept: "text/csv" } };

type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  $ref?: string;
  allOf?: Schema[];
};

describe("review 23: CSV on every list GET of /openapi.json", () => {
  it("each GET answering a top-level array offers text/csv, and CSV columns are fields of its items", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    const resolve = (s: Schema | undefined): Schema | undefined => {
      if (!s?.$ref) return s;
      const name = s.$ref.replace("#/components/schemas/", "");
      return resolve(doc.components?.schemas?.[name]);
    };
    const variants = (s: Schema | undefined): Schema[] => {
      const r = resolve(s);
      if (!r) return [];
      const alts = r.anyOf ?? r.oneOf ?? r.allOf;
      return alts ? alts.flatMap(variants) : [r];
    };
    const lists: string[] = [];
    const missing: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, any>)) {
      const ok = ops.get?.responses?.["200"]?.content;
      const schema = ok?.["application/json"]?.schema as Schema | undefined;
      if (!schema) continue;
      const arrays = variants(schema).flatMap((v) =>
        Object.entries(v.properties ?? {})
          .filter(([, p]) => resolve(p)?.type === "array")
          .map(([name]) => name),
      );
      if (arrays.length === 0) continue;
      lists.push(path);
      if (!ok["text/csv"]) missing.push(`${path} (${arrays.join(",")})`);
      const entry = CSV_LISTS.find((e) => e.path === path);
      if (!entry) continue;
      expect(arrays, path).toContain(entry.list);
      const itemFields = new Set(
        variants(schema).flatMap((v) =>
          Object.keys(variants(resolve(v.properties?.[entry.list])?.items)[0]?.properties ?? {}),
        ),
      );
      for (const column of entry.columns)
        if (typeof column === "string" && itemFields.size > 0)
          expect(itemFields, `${path} column ${column}`).toContain(column.split(".")[0]);
    }
    expect(lists).toContain("/v1/trending/{stream}/rising");
    expect(lists).toContain("/v1/trending/{stream}/history");
    expect(missing).toEqual([]);
  });

  it("rising and history as CSV equal their JSON; quoting of member names; errors stay JSON", async () => {
    const names = ["a,b", 'q"x', "=cmd", "-1", "@x", "+y"];
    api.setNow(Date.UTC(2026, 10, 28, 8, 10));
    expect((await api.post("/v1/trending/s/events", { events: [{ member: "a,b", count: 1 }] })).status).toBe(200);
    api.setNow(Date.UTC(2026, 10, 28, 9, 30));
    const events = names.map((member, i) => ({ member, count: i + 2 }));
    expect((await api.post("/v1/trending/s/events", { events })).status).toBe(200);
    const json = (await api.get("/v1/trending/s/rising?n=10&baseline=2h")).body;
    expect(json.items.length).toBe(names.length);
    const res = await api.get("/v1/trending/s/rising?n=10&baseline=2h", CSV);
    expect(res.status).toBe(200);
    const rows = parseCsv(res.body);
    expect(rows[0]).toEqual(["member", "count", "baseline", "ratio", "score"]);
    const guard = (m: string) => (/^[=+\-@]/.test(m) ? `'${m}` : m);
    expect(rows.slice(1)).toEqual(
      json.items.map((r: any) => [
        guard(r.member),
        String(r.count),
        String(r.baseline),
        r.ratio === null ? "" : String(r.ratio),
        String(r.score),
      ]),
    );
    const hist = (await api.get(`/v1/trending/s/history?member=${encodeURIComponent("a,b")}&hours=2`)).body;
    const hrows = parseCsv(
      (await api.get(`/v1/trending/s/history?member=${encodeURIComponent("a,b")}&hours=2`, CSV)).body,
    );
    expect(hrows[0]).toEqual(["hour", "count", "maxError"]);
    expect(hrows.slice(1)).toEqual(hist.points.map((p: any) => [String(p.hour), String(p.count), String(p.maxError)]));
    expect(hrows.slice(1).map((r) => r[1])).toEqual(["0", "1", "2"]);
    // empty: header alone
    expect((await api.get("/v1/trending/none/rising", CSV)).body).toBe("member,count,baseline,ratio,score\r\n");
    // errors stay JSON envelopes
    for (const bad of [
      "/v1/trending/s/rising?n=0",
      "/v1/trending/s/rising?baseline=soon",
      "/v1/trending/s/history?hours=2",
    ]) {
      const r = await api.get(bad, CSV);
      expect(r.status, bad).toBe(400);
      expect(r.headers.get("content-type"), bad).toMatch(/^application\/json/);
      expect(r.body.error.code, bad).toBeTypeOf("string");
    }
    // single objects: 406 as JSON
    for (const single of ["/v1/presence/_total", "/v1/presence/r?day=2026-11-27", "/v1/ingest/status"]) {
      const r = await api.get(single, single.includes("ingest") ? { key: "admin", ...CSV } : CSV);
      expect(r.status, single).toBe(406);
      expect(r.body.error.code).toBe("not_acceptable");
    }
  });

  it("presence members page through Link as CSV with ids needing quoting and URL escaping", async () => {
    const ids = ["a,b", "x&y=1", "=1", 'q"q', "p%2Fq", "#h", "é ü", "+z"];
    expect((await api.post("/v1/presence/room1/heartbeats", { ids })).status).toBe(200);
    const seen: string[] = [];
    let url: string | null = "/v1/presence/room1/members?limit=3";
    let pages = 0;
    for (; url && pages < 10; pages++) {
      const page: { status: number; body: string; headers: Headers } = await api.get(url, CSV);
      expect(page.status, url).toBe(200);
      const rows = parseCsv(page.body);
      expect(rows[0]).toEqual(["id", "lastSeen"]);
      seen.push(...rows.slice(1).map((r) => r[0]!));
      url = /<([^>]+)>; rel="next"/.exec(page.headers.get("link") ?? "")?.[1] ?? null;
    }
    const guard = (m: string) => (/^[=+\-@]/.test(m) ? `'${m}` : m);
    expect(seen.sort()).toEqual(ids.map(guard).sort());
    expect(pages).toBe(3);
  });

  it("presence ?day= today and yesterday agree with the live figures of that day", async () => {
    api.setNow(Date.UTC(2026, 10, 27, 10, 0));
    expect((await api.post("/v1/presence/dayroom/heartbeats", { ids: ["u1", "u2", "u3"] })).status).toBe(200);
    api.setNow(Date.UTC(2026, 10, 27, 23, 0));
    expect((await api.post("/v1/presence/dayroom/heartbeats", { ids: ["u1", "u4"] })).status).toBe(200);
    const live = (await api.get("/v1/presence/dayroom")).body;
    const today = (await api.get("/v1/presence/dayroom?day=2026-11-27")).body;
    expect(today).toMatchObject({
      day: "2026-11-27",
      peak: live.peakToday,
      peakAt: live.peakAt,
      active: live.activeToday,
      new: live.newToday,
    });
    expect(today).toMatchObject({ peak: 3, active: 4, new: 4 });
    api.setNow(Date.UTC(2026, 10, 28, 9, 30));
    expect((await api.post("/v1/presence/dayroom/heartbeats", { ids: ["u1", "u5"] })).status).toBe(200);
    const yesterday = (await api.get("/v1/presence/dayroom?day=2026-11-27")).body;
    expect(yesterday).toEqual(today);
    const now = (await api.get("/v1/presence/dayroom?day=2026-11-28")).body;
    expect(now).toMatchObject({ peak: 2, active: 2, new: 1 });
    for (const bad of ["2026-11-29", "2025-10-23", "2026-02-30", "2026-11-28T00:00Z", ""]) {
      const r = await api.get(`/v1/presence/dayroom?day=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.body.error.details?.[0]?.path ?? "day", bad).toBe("day");
    }
    expect((await api.get("/v1/presence/dayroom?day=2025-10-24")).status).toBe(200);
    expect((await api.get("/v1/presence/_total?day=2026-11-28")).status).toBe(400);
  });
});
