import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadAreas, money, render } from "../../dev/costs.ts";

describe("docs/costs.md", () => {
  it("is generated from the rows the cost tests assert (run `npm run costs` when this fails)", async () => {
    const areas = await loadAreas();
    expect(areas.length).toBeGreaterThan(0);
    const page = readFileSync(join(import.meta.dirname, "..", "..", "docs", "costs.md"), "utf8");
    expect(page).toBe(render(areas));
  });

  it("lists only rows a cost test can check: whole round trips, non-negative commands", async () => {
    for (const area of await loadAreas()) {
      for (const [id, row] of Object.entries(area.rows)) {
        expect(Number.isInteger(row.roundTrips), `${area.title}.${id}`).toBe(true);
        expect(row.commands, `${area.title}.${id}`).toBeGreaterThanOrEqual(0);
      }
    }
  });

  // a note explains a figure, it does not excuse it: only a row marked `exception` may pass its
  // target, so a later change cannot exceed one silently
  it("holds every row with a target to it, but the rows marked as documented exceptions", async () => {
    const exceptions: string[] = [];
    for (const area of await loadAreas()) {
      for (const [id, row] of Object.entries(area.rows)) {
        const name = `${area.title}.${id}`;
        if (row.exception !== undefined) {
          expect(row.target, `${name}: an exception to which target?`).toBeDefined();
          expect(row.exception.length, `${name}: say why`).toBeGreaterThan(20);
          // an exception that no longer exceeds its target is stale: drop the mark
          expect(row.commands, `${name} is marked as over its target but is not`).toBeGreaterThan(row.target!);
          exceptions.push(name);
        } else if (row.target !== undefined) {
          expect(row.commands, `${name} over its target`).toBeLessThanOrEqual(row.target);
        }
      }
    }
    expect(exceptions.sort()).toEqual([
      "Counters.deleteMemberDays400Dense",
      "Counters.deleteMemberHours60",
      "Counters.deleteMemberHours60Dense",
    ]);
  });

  it("prints dollars with thousands separators", () => {
    expect(money(8400)).toBe("$8,400");
    expect(money(2004)).toBe("$2,004");
    expect(money(120)).toBe("$120");
    expect(money(4)).toBe("$4.00");
    expect(money(0.2)).toBe("$0.200");
  });
});
