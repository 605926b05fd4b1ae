import { describe, expect, it } from "vitest";
import {
  HOUR,
  hourIndex,
  hourLabel,
  isoWeek,
  parseAt,
  parseWindow,
  periodEnd,
  periodLabel,
  periodStart,
  periodsBetween,
} from "../../src/time.ts";

describe("time math", () => {
  it("parses epoch ms and ISO-8601 (zone-less read as UTC) and rejects the rest", () => {
    expect(parseAt(1_700_000_000_000)).toBe(1_700_000_000_000);
    expect(parseAt("2026-11-22T15:04:05Z")).toBe(Date.UTC(2026, 10, 22, 15, 4, 5));
    expect(parseAt("2026-11-22T15:04:05")).toBe(Date.UTC(2026, 10, 22, 15, 4, 5));
    expect(parseAt("2026-11-22T15:04:05+02:00")).toBe(Date.UTC(2026, 10, 22, 13, 4, 5));
    expect(parseAt("2026-11-22")).toBe(Date.UTC(2026, 10, 22));
    for (const bad of [
      1.5,
      Number.NaN,
      Infinity,
      "yesterday",
      "2026-13-45T99:00:00Z",
      "2026-02-30",
      "2026-02-29T10:00:00Z",
      "2026-04-31",
      "",
      null,
      {},
    ])
      expect(parseAt(bad)).toBeNull();
    expect(parseAt("2028-02-29T10:00:00Z")).toBe(Date.UTC(2028, 1, 29, 10));
  });

  it("parses windows 1h..168h and 1d..7d", () => {
    expect(parseWindow("24h")).toBe(24);
    expect(parseWindow("2d")).toBe(48);
    expect(parseWindow("168h")).toBe(168);
    for (const bad of ["0h", "169h", "8d", "24", "h", "-1h", "1.5h", "024h"]) expect(parseWindow(bad)).toBeNull();
  });

  it("labels hours, days, ISO weeks and months in UTC", () => {
    const t = Date.UTC(2026, 10, 22, 15, 30);
    expect(hourLabel(hourIndex(t))).toBe("2026112215");
    expect(periodLabel("day", t)).toBe("20261122");
    expect(periodLabel("week", t)).toBe("2026-W47");
    expect(periodLabel("month", t)).toBe("202611");
    // ISO week years differ from calendar years around New Year.
    expect(isoWeek(Date.UTC(2027, 0, 1))).toEqual({ year: 2026, week: 53 });
    expect(isoWeek(Date.UTC(2024, 11, 30))).toEqual({ year: 2025, week: 1 });
  });

  it("computes period bounds and ranges", () => {
    const t = Date.UTC(2026, 10, 22, 15, 30); // a Sunday
    expect(periodStart("week", t)).toBe(Date.UTC(2026, 10, 16));
    expect(periodEnd("week", t)).toBe(Date.UTC(2026, 10, 23));
    expect(periodEnd("month", Date.UTC(2026, 11, 31, 23))).toBe(Date.UTC(2027, 0, 1));
    expect(periodEnd("hour", t) - periodStart("hour", t)).toBe(HOUR);
    expect(
      periodsBetween("day", Date.UTC(2026, 10, 30), Date.UTC(2026, 11, 2, 5)).map((d) => periodLabel("day", d)),
    ).toEqual(["20261130", "20261201", "20261202"]);
  });
});
