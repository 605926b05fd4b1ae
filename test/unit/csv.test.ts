import { describe, expect, it } from "vitest";
import { CSV_LISTS, csvField, csvFilename, csvListFor, describeCsv, prefersCsv, toCsv } from "../../functions/csv.ts";
import { parseCsv } from "../helpers/csv.ts";

describe("csvField (RFC 4180)", () => {
  it("leaves plain text and numbers bare", () => {
    expect(csvField("plain")).toBe("plain");
    expect(csvField(42)).toBe("42");
    expect(csvField(-7.5)).toBe("-7.5");
    expect(csvField(true)).toBe("true");
    expect(csvField(0)).toBe("0");
  });

  it("quotes fields holding a comma, a quote, CR or LF, doubling quotes", () => {
    expect(csvField("a,b")).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField("two\nlines")).toBe('"two\nlines"');
    expect(csvField("cr\rhere")).toBe('"cr\rhere"');
    expect(csvField("crlf\r\nhere")).toBe('"crlf\r\nhere"');
    expect(csvField('"')).toBe('""""');
  });

  it("writes null and absent values as empty fields", () => {
    expect(csvField(null)).toBe("");
    expect(csvField(undefined)).toBe("");
    expect(csvField("")).toBe("");
  });

  it("keeps unicode as is (UTF-8 on the wire)", () => {
    expect(csvField("café ☕ 東京 👩‍💻")).toBe("café ☕ 東京 👩‍💻");
    expect(csvField("ünï,cödé")).toBe('"ünï,cödé"');
  });

  it("attack: neutralises spreadsheet formulas in text (= + - @ TAB CR), never in numbers", () => {
    expect(csvField('=HYPERLINK("http://evil","x")')).toBe('"\'=HYPERLINK(""http://evil"",""x"")"');
    expect(csvField("+1 555 0100")).toBe("'+1 555 0100");
    expect(csvField("-2+3")).toBe("'-2+3");
    expect(csvField("@SUM(A1)")).toBe("'@SUM(A1)");
    expect(csvField("\tcmd")).toBe("'\tcmd");
    expect(csvField("\r=1")).toBe('"\'\r=1"');
    // a number is data, not a formula: negative scores stay numbers
    expect(csvField(-5)).toBe("-5");
    // only the first character matters
    expect(csvField("a=b")).toBe("a=b");
  });

  it("writes nested values as their JSON in one cell", () => {
    expect(csvField({ country: "ES" })).toBe('"{""country"":""ES""}"');
    expect(csvField(["a", "b"])).toBe('"[""a"",""b""]"');
  });
});

describe("toCsv", () => {
  it("writes a header row and CRLF after every record, and reads back to the same values", () => {
    const items = [
      { rank: 1, member: "a,b", score: 3 },
      { rank: 2, member: 'q"uote', score: -1 },
      { rank: 3, member: "line\nbreak", score: 0.5 },
      { rank: 4, member: "ünïcödé ☕", score: 1e21 },
    ];
    const text = toCsv(["rank", "member", "score"], items);
    expect(text.startsWith("rank,member,score\r\n")).toBe(true);
    expect(text.endsWith("\r\n")).toBe(true);
    expect(parseCsv(text)).toEqual([
      ["rank", "member", "score"],
      ["1", "a,b", "3"],
      ["2", 'q"uote', "-1"],
      ["3", "line\nbreak", "0.5"],
      ["4", "ünïcödé ☕", "1e+21"],
    ]);
  });

  it("an empty list is the header row alone", () => {
    expect(toCsv(["id", "lastSeen"], [])).toBe("id,lastSeen\r\n");
  });

  it("reads dotted columns from nested objects and derived columns from the item", () => {
    const text = toCsv(["a.b", "missing.deep", { header: "name", value: (item) => item }], ["x"]);
    expect(text).toBe("a.b,missing.deep,name\r\n,,x\r\n");
    expect(toCsv(["window.hours"], [{ window: { hours: 24 } }])).toBe("window.hours\r\n24\r\n");
  });
});

describe("prefersCsv (Accept)", () => {
  it.each([
    ["text/csv", true],
    ["TEXT/CSV; charset=utf-8", true],
    ["text/csv, */*", true],
    ["text/csv;q=0.9, application/json;q=0.5", true],
    ["*/*, text/csv", true],
    ["text/csv, application/json", true],
    [undefined, false],
    ["", false],
    ["*/*", false],
    ["text/*", false],
    ["application/json", false],
    ["application/json, text/csv", false],
    ["application/json, text/csv;q=0.5", false],
    ["text/csv;q=0", false],
    ["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false],
  ])("%s → %s", (accept, csv) => {
    expect(prefersCsv(accept)).toBe(csv);
  });
});

describe("the route table", () => {
  it("finds the list of every list GET, v2 routes included", () => {
    const cases: [string, string][] = [
      ["/v1/trending", "streams"],
      ["/v1/trending/s1/top", "items"],
      ["/v1/trending/s1/rising", "items"],
      ["/v1/trending/s1/history", "points"],
      ["/v1/counters", "items"],
      ["/v1/counters/c1/top", "items"],
      ["/v1/counters/c1/bottom", "items"],
      ["/v1/counters/c1/range", "items"],
      ["/v1/counters/c1/sorted", "items"],
      ["/v1/histograms", "histograms"],
      ["/v1/histograms/latency", "buckets"],
      ["/v1/presence", "rooms"],
      ["/v1/presence/lobby/members", "members"],
      ["/v1/presence/lobby/history", "points"],
      ["/v1/leaderboards", "boards"],
      ["/v1/leaderboards/arena", "items"],
      ["/v1/leaderboards/arena/players/p1/around", "items"],
      ["/v1/leaderboards/arena/seasons", "seasons"],
      ["/v1/webhooks", "webhooks"],
      ["/v1/webhooks/hook/deliveries", "deliveries"],
    ];
    for (const [path, list] of cases) expect(csvListFor(path)?.list, path).toBe(list);
    expect(new Set(CSV_LISTS.map((e) => e.path)).size).toBe(CSV_LISTS.length);
  });

  it("has no list for single objects (→ 406)", () => {
    for (const path of [
      "/v1/presence/lobby",
      "/v1/presence/_total",
      "/v1/counters/c1/members/m1",
      "/v1/trending/s1/members/m1",
      "/v1/leaderboards/arena/players/p1",
      "/v1/leaderboards/arena/count",
      "/v1/ingest/status",
      "/v1/trending/s1/top/extra",
    ]) {
      expect(csvListFor(path), path).toBeUndefined();
    }
  });

  it("names the download after the path", () => {
    expect(csvFilename("/v1/trending/searches/top")).toBe("trending-searches-top.csv");
    expect(csvFilename("/v1/leaderboards/arena/players/p%201/around")).toBe(
      "leaderboards-arena-players-p_1-around.csv",
    );
    expect(csvFilename("/v1/presence/a%22b%0D%0A/members")).toBe("presence-a_b_-members.csv");
    expect(csvFilename("/v1/trending")).toBe("trending.csv");
  });
});

describe("describeCsv", () => {
  it("adds text/csv to the 200 of each list GET in the document and the rules to its description, leaving the given info alone", () => {
    const info = { title: "t", description: "API." };
    const doc = {
      info,
      paths: {
        "/v1/trending/{stream}/top": {
          get: { responses: { "200": { description: "ok", content: { "application/json": { schema: {} } } } } },
        },
        "/v1/presence/{room}": {
          get: { responses: { "200": { description: "ok", content: { "application/json": { schema: {} } } } } },
        },
      },
    };
    const out = describeCsv(doc);
    const top = out.paths["/v1/trending/{stream}/top"].get.responses["200"] as unknown as {
      content: Record<string, { schema: { example: string } }>;
    };
    expect(Object.keys(top.content)).toEqual(["application/json", "text/csv"]);
    expect(top.content["text/csv"]!.schema.example).toBe("rank,member,count\r\n");
    expect(Object.keys(out.paths["/v1/presence/{room}"].get.responses["200"].content)).toEqual(["application/json"]);
    expect(out.info.description).toMatch(/^API\.\n\n\*\*CSV\.\*\*/);
    expect(info.description).toBe("API.");
  });
});
