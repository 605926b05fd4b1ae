import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadAreas, render } from "../../dev/costs.ts";

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
        if (row.target !== undefined && !row.note)
          expect(row.commands, `${area.title}.${id} over its target`).toBeLessThanOrEqual(row.target);
      }
    }
  });
});
