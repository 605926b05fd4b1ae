import { describe, expect, it } from "vitest";
import { CronSchedule, cronMatches } from "../../dev/cron.ts";

describe("dev cron matcher", () => {
  it("matches wrangler.toml's expressions in UTC", () => {
    expect(cronMatches("5 * * * *", new Date(Date.UTC(2026, 10, 22, 15, 5)))).toBe(true);
    expect(cronMatches("5 * * * *", new Date(Date.UTC(2026, 10, 22, 15, 6)))).toBe(false);
    expect(cronMatches("* * * * *", new Date(Date.UTC(2026, 10, 22, 15, 6)))).toBe(true);
    expect(cronMatches("*/15 9-17 * * 1-5", new Date(Date.UTC(2026, 10, 23, 9, 30)))).toBe(true);
    expect(cronMatches("*/15 9-17 * * 1-5", new Date(Date.UTC(2026, 10, 22, 9, 30)))).toBe(false);
  });

  it("fires each due expression once per minute", () => {
    const s = new CronSchedule('crons = ["5 * * * *", "* * * * *"]');
    expect(s.expressions).toEqual(["5 * * * *", "* * * * *"]);
    const t = new Date(Date.UTC(2026, 10, 22, 15, 5, 1));
    expect(s.due(t)).toEqual(["5 * * * *", "* * * * *"]);
    expect(s.due(new Date(t.getTime() + 30_000))).toEqual([]);
    expect(s.due(new Date(t.getTime() + 60_000))).toEqual(["* * * * *"]);
  });
});
