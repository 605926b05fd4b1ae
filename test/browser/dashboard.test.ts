/**
 * The dashboard in headless Chromium against `wrangler dev`, the local Upstash
 * server and a real redis-server: data goes in through the HTTP API, the page
 * is driven like a person would, screenshots land in test/artifacts/.
 */
import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import type { BrowserContext, Page, Response as PageResponse } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { command, keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";
import { seasonAt, seasonBefore } from "../../src/leaderboards/seasons.ts";
import { dashboardDev } from "./helpers/dashboard-dev.ts";
import {
  WAIT,
  cells,
  downloadCsv,
  enterKey,
  panel,
  pick,
  refreshes,
  state,
  stateWithAlert,
  text,
  watchErrors,
} from "./helpers/page.ts";

const ARTIFACTS = resolve(import.meta.dirname, "../artifacts");
const suffix = Math.random().toString(36).slice(2, 10);
const KEYS = { ingest: `b-ingest-${suffix}`, read: `b-read-key-${suffix}`, admin: `b-admin-${suffix}` };

const dev = dashboardDev("dashboard", KEYS);
const { target, prefix, tag } = dev;
let desktop: BrowserContext;
let page: Page;
const pageErrors: string[] = [];
const send = dev.send;

async function seed() {
  await send("POST", "/v1/trending/searches/events", KEYS.ingest, {
    events: [
      { member: "555-0100", count: 5 },
      { member: "555-0101", count: 3 },
      { member: "555-0102", count: 1 },
    ],
  });
  await send("POST", "/v1/trending/clicks/events", KEYS.ingest, { member: "buy-button" });
  await send("POST", "/v1/counters/pages/incr", KEYS.ingest, {
    items: [
      { member: "/home", by: 7 },
      { member: "/about", by: 2 },
      { member: "/pricing", by: 4 },
    ],
  });
  await send("PUT", "/v1/histograms/latency", KEYS.admin, { bucketWidth: 10, unit: "ms" });
  await send("POST", "/v1/histograms/latency/observations", KEYS.ingest, {
    values: [3, 8, 12, 14, 18, 22, 25, 31, 38, 44, 47, 52, 58, 63, 71, 85, 97, 120, 180, 240].map((value) => ({
      value,
    })),
  });
  await send("POST", "/v1/presence/lobby/heartbeats", KEYS.ingest, { ids: ["u1", "u2", "u3"] });
  // The per-minute job samples the online count into the history the sparkline draws.
  await send("POST", "/internal/jobs/trim", KEYS.admin);
  await send("PUT", "/v1/leaderboards/arena/players/p1", KEYS.ingest, { name: "Ada", score: 120 });
  await send("PUT", "/v1/leaderboards/arena/players/p2", KEYS.ingest, { name: "Bob", score: 80 });
  await send("PUT", "/v1/leaderboards/arena/players/p3", KEYS.ingest, { name: "Cy", score: 150 });
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  await seed();
  desktop = await dev.browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await desktop.newPage();
  watchErrors(page, pageErrors);
});

describe("dashboard in Chromium", () => {
  it("wrote the seeded data under its own key prefix (the --var settings took effect)", async () => {
    const keys = await keysUnder(target, prefix);
    expect(keys.some((k) => k.includes(":trending:"))).toBe(true);
    expect(keys.some((k) => k.includes(":presence:"))).toBe(true);
  });

  it("asks for a read key, stores it, and renders every panel from the API", async () => {
    await page.goto(`${dev.url}/`);
    expect(await state(page)).toBe("idle");
    await expect.poll(() => page.getByLabel("Read API key").isVisible()).toBe(true);
    await enterKey(page, KEYS.read);
    await expect.poll(() => stateWithAlert(page), WAIT).toBe("live");
    expect(await page.evaluate(() => localStorage.getItem("edgestats.dashboard.readKey"))).toBe(KEYS.read);
    expect(await page.getByLabel("Read API key").isVisible()).toBe(false);

    // Trending: bars in rank order with the exact flag.
    await pick(page, "trending", "searches");
    await expect
      .poll(() => panel(page, "trending").locator(".bars li .label").allTextContents(), WAIT)
      .toEqual(["555-0100", "555-0101", "555-0102"]);
    expect(await panel(page, "trending").locator(".bars li .value").allTextContents()).toEqual(["5", "3", "1"]);
    // ranks are read out as words: aria-label would be ignored on a plain span
    expect(await panel(page, "trending").locator(".bars li .rank").allTextContents()).toEqual([
      "rank #1",
      "rank #2",
      "rank #3",
    ]);
    expect(await panel(page, "trending").locator(".badge").getAttribute("data-exact")).toBe("true");
    expect(await text(page, "#panel-trending .badge")).toBe("exact");
    expect(await text(page, "#panel-trending .meta")).toMatch(/as of \d\d:\d\d:\d\d/);
    expect(await page.locator("#pick-trending option").allTextContents()).toEqual(
      expect.arrayContaining(["clicks", "searches"]),
    );

    // Counter top 10.
    await pick(page, "counter", "pages");
    await expect
      .poll(() => panel(page, "counter").locator(".bars li .label").allTextContents(), WAIT)
      .toEqual(["/home", "/pricing", "/about"]);
    expect(await panel(page, "counter").locator(".bars li .value").allTextContents()).toEqual(["7", "4", "2"]);

    // Histogram bars with p50/p90/p99 marked.
    await pick(page, "histogram", "latency");
    await expect.poll(() => panel(page, "histogram").locator("svg.hist rect.bucket").count(), WAIT).toBeGreaterThan(3);
    expect(await panel(page, "histogram").locator("svg.hist line.mark").count()).toBe(3);
    expect(await panel(page, "histogram").locator("svg.hist text.mark-label").allTextContents()).toEqual([
      "p50",
      "p90",
      "p99",
    ]);
    const legend = await panel(page, "histogram").locator(".legend li").allTextContents();
    expect(legend.map((l) => l.split(" ")[0])).toEqual(["p50", "p90", "p99"]);
    for (const entry of legend) expect(entry).toMatch(/^p\d\d [\d.,]+ ms$/);
    expect(await text(page, "#panel-histogram .meta")).toContain("20 observations");

    // Presence: online now and today's figures, with the sampled history.
    await pick(page, "presence", "lobby");
    await expect.poll(() => text(page, '#panel-presence [data-stat="online"] dd'), WAIT).toBe("3");
    expect(await text(page, '#panel-presence [data-stat="pcu"] dd')).toBe("3");
    expect(await text(page, '#panel-presence [data-stat="au"] dd')).toBe("3");
    expect(await text(page, '#panel-presence [data-stat="nu"] dd')).toBe("3");
    expect(
      Number(await panel(page, "presence").locator("figure.spark").getAttribute("data-samples")),
    ).toBeGreaterThanOrEqual(1);

    // Leaderboard: first page with ranks.
    await pick(page, "leaderboard", "arena");
    await expect.poll(() => panel(page, "leaderboard").locator("tbody tr").count(), WAIT).toBe(3);
    const rows = await cells(panel(page, "leaderboard").locator("tbody tr"));
    expect(rows).toEqual([
      ["1", "p3", "Cy", "150", ""],
      ["2", "p1", "Ada", "120", ""],
      ["3", "p2", "Bob", "80", ""],
    ]);

    await page.screenshot({ path: resolve(ARTIFACTS, "dashboard-desktop.png"), fullPage: true });
    expect(pageErrors).toEqual([]);
  });

  it("downloads what a panel shows as CSV, fetched with the read key", async () => {
    expect(await downloadCsv(page, "trending")).toEqual({
      name: "trending-searches-top.csv",
      text: "rank,member,count\r\n1,555-0100,5\r\n2,555-0101,3\r\n3,555-0102,1\r\n",
    });
    const board = await downloadCsv(page, "leaderboard");
    expect(board.name).toBe("leaderboards-arena.csv");
    expect(board.text.split("\r\n").slice(0, 2)).toEqual([
      "rank,player,name,score,previousRank,bestRank",
      "1,p3,Cy,150,,1",
    ]);
    const histogram = await downloadCsv(page, "histogram");
    expect(histogram.text.startsWith("lower,upper,count\r\n0,10,2\r\n")).toBe(true);
    expect(await page.locator("#alert").isHidden()).toBe(true);
    expect(pageErrors).toEqual([]);
  });

  it("shows new data within the refresh, without reloading the page", async () => {
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    await send("POST", "/v1/trending/searches/events", KEYS.ingest, { member: "555-0101", count: 10 });
    await send("POST", "/v1/counters/pages/incr", KEYS.ingest, { member: "/about", by: 20 });
    await send("POST", "/v1/histograms/latency/observations", KEYS.ingest, { values: [{ value: 15 }, { value: 16 }] });
    await send("POST", "/v1/presence/lobby/heartbeats", KEYS.ingest, { ids: ["u4", "u5"] });
    await send("POST", "/v1/leaderboards/arena/players/p2/score", KEYS.ingest, { set: 500 });

    await expect.poll(() => text(page, "#panel-trending .bars li .label"), WAIT).toBe("555-0101");
    expect(await text(page, "#panel-trending .bars li .value")).toBe("13");
    await expect.poll(() => text(page, "#panel-counter .bars li .label"), WAIT).toBe("/about");
    expect(await text(page, "#panel-counter .bars li .value")).toBe("22");
    await expect.poll(() => text(page, '#panel-presence [data-stat="online"] dd'), WAIT).toBe("5");
    await expect.poll(() => text(page, "#panel-histogram .meta"), WAIT).toContain("22 observations");
    await expect.poll(() => text(page, "#panel-leaderboard tbody tr .player"), WAIT).toBe("p2");
    expect(await text(page, "#panel-leaderboard tbody tr td")).toBe("1");

    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(await state(page)).toBe("live");
    expect(pageErrors).toEqual([]);
  });

  it("costs one Redis round trip per API call it makes (none for edge-cache hits)", async () => {
    // Start right after a timed refresh finished: the next timer is then ~5 s away.
    const before = await refreshes(page);
    await expect.poll(() => refreshes(page), WAIT).toBeGreaterThan(before);
    const calls: { path: string; cache: string | undefined }[] = [];
    const record = (res: PageResponse) => {
      const url = new URL(res.url());
      if (url.pathname.startsWith("/v1/"))
        calls.push({ path: url.pathname, cache: res.headers()["x-edgestats-cache"] });
    };
    await resetStats(target, tag);
    page.on("response", record);
    const started = await refreshes(page);
    await page.getByRole("button", { name: "Refresh now" }).click();
    await expect.poll(() => refreshes(page), WAIT).toBe(started + 1);
    page.off("response", record);
    const redis = await statsOf(target, tag);

    // "Refresh now" re-reads the five pickers, then five panels (presence also reads its history).
    expect(calls.map((c) => c.path).sort()).toEqual(
      [
        "/v1/counters",
        "/v1/counters/pages/top",
        "/v1/histograms",
        "/v1/histograms/latency",
        "/v1/leaderboards",
        "/v1/leaderboards/arena",
        "/v1/presence",
        "/v1/presence/lobby",
        "/v1/presence/lobby/history",
        "/v1/trending",
        "/v1/trending/searches/top",
      ].sort(),
    );
    const fromRedis = calls.filter((c) => c.cache !== "hit").length;
    expect(redis.requests).toBe(fromRedis);
    console.log(
      `dashboard refresh: ${calls.length} API calls, ${redis.requests} Redis round trips, ${redis.commands} commands`,
    );
  });

  it("trending panel: the Rising toggle shows what climbs above its usual rate, remembered, and exports it as CSV", async () => {
    // Rising reads the current hour: seeding in the last seconds of an hour would leave it empty when read.
    const HOUR = 3_600_000;
    const left = HOUR - (Date.now() % HOUR);
    if (left < 30_000) await new Promise((done) => setTimeout(done, left + 1_000));
    // Two hours ago (a baseline hour): "growing" at 1 an hour on average over 24 h, "fading" at 1,000.
    const earlier = Date.now() - 2 * HOUR;
    await send("POST", "/v1/trending/signals/events", KEYS.ingest, {
      events: [
        { member: "growing", count: 24, at: earlier },
        { member: "fading", count: 24_000, at: earlier },
        // This hour: "growing" far above its rate, "fresh" never seen before, "fading" far below its rate.
        { member: "growing", count: 20 },
        { member: "fresh", count: 4 },
        { member: "fading", count: 1 },
      ],
    });
    const trending = panel(page, "trending");
    await pick(page, "trending", "signals");
    await expect
      .poll(() => trending.locator(".bars li .label").allTextContents(), WAIT)
      .toEqual(["fading", "growing", "fresh"]);
    const top = trending.getByRole("button", { name: "Top", exact: true });
    const risingButton = trending.getByRole("button", { name: "Rising" });
    expect(await top.getAttribute("aria-pressed")).toBe("true");
    expect(await risingButton.getAttribute("aria-pressed")).toBe("false");

    await risingButton.click();
    expect(await risingButton.getAttribute("aria-pressed")).toBe("true");
    expect(await top.getAttribute("aria-pressed")).toBe("false");
    const rows = (p: Page) => cells(panel(p, "trending").locator("table.rising tbody tr"));
    // score = (count − baseline) / √(baseline + 1), baseline = the 24 h average × the elapsed part of this hour
    // (0..1 for "growing": its score is 13.4..20, above "fresh"'s 4); "fading" scores below 0 and is left out.
    await expect.poll(() => rows(page), WAIT).toHaveLength(2);
    const [growing, fresh] = await rows(page);
    expect(fresh).toEqual(["fresh", "4", "0", "new", "4"]);
    expect(growing![0]).toBe("growing");
    expect(growing![1]).toBe("20");
    expect(Number(growing![2])).toBeLessThanOrEqual(1);
    expect(growing![3]).toMatch(/^×[\d.,]+$/);
    expect(Number(growing![4])).toBeGreaterThan(13);
    expect(await text(page, "#panel-trending .meta")).toMatch(/baseline 24 h.*% of the hour.*as of \d\d:\d\d:\d\d/);
    expect(await trending.locator(".badge").getAttribute("data-exact")).toBe("true");
    expect(await page.evaluate(() => localStorage.getItem("edgestats.dashboard.views"))).toBe('{"trending":"rising"}');

    // The CSV button exports the view shown.
    const download = await downloadCsv(page, "trending");
    expect(download.name).toBe("trending-signals-rising.csv");
    const lines = download.text.split("\r\n");
    expect(lines[0]).toBe("member,count,baseline,ratio,score");
    expect(lines[1]).toMatch(/^growing,20,/);
    expect(lines[2]).toBe("fresh,4,0,,4");

    // Refreshed like the other panels: new events show up in the rising table.
    await send("POST", "/v1/trending/signals/events", KEYS.ingest, { member: "fresh", count: 30 });
    await expect.poll(async () => (await rows(page)).map((r) => r[0]), WAIT).toEqual(["fresh", "growing"]);
    expect((await rows(page))[0]).toEqual(["fresh", "34", "0", "new", "34"]);
    await page.screenshot({ path: resolve(ARTIFACTS, "dashboard-rising.png"), fullPage: true });

    // The choice survives a reload.
    await page.reload();
    await expect.poll(() => stateWithAlert(page), WAIT).toBe("live");
    expect(await panel(page, "trending").getByRole("button", { name: "Rising" }).getAttribute("aria-pressed")).toBe(
      "true",
    );
    await expect.poll(async () => (await rows(page)).length, WAIT).toBe(2);

    // A deployment without the rising endpoint: the panel says so and keeps its toggle.
    const noRising = "**/v1/trending/*/rising?*";
    await page.route(noRising, (route) =>
      route.fulfill({
        status: 404,
        contentType: "application/json",
        body: JSON.stringify({ error: { code: "not_found", message: "No route" } }),
      }),
    );
    await expect
      .poll(() => text(page, "#panel-trending [data-role=body]"), WAIT)
      .toBe("Rising is not available on this deployment.");
    expect(
      await panel(page, "trending")
        .getByRole("button", { name: /as CSV/ })
        .isDisabled(),
    ).toBe(true);
    await page.unroute(noRising);

    // Back to Top on the stream the later checks read.
    await panel(page, "trending").getByRole("button", { name: "Top", exact: true }).click();
    await pick(page, "trending", "searches");
    await expect.poll(() => text(page, "#panel-trending .bars li .label"), WAIT).toBe("555-0101");
    expect(await page.evaluate(() => localStorage.getItem("edgestats.dashboard.views"))).toBe('{"trending":"top"}');
    expect(pageErrors).toEqual([]);
  });

  it("leaderboard panel: a seasonal board has a season picker and shows each player's movement", async () => {
    // A daily board whose yesterday is written straight into Redis (wrangler dev runs on the real clock):
    // p2 won yesterday, p1 was second; today p1 leads.
    await send("PUT", "/v1/leaderboards/seasonal", KEYS.admin, { reset: "daily" });
    await send("PUT", "/v1/leaderboards/seasonal/players/p1", KEYS.ingest, { name: "Ada" });
    await send("PUT", "/v1/leaderboards/seasonal/players/p2", KEYS.ingest, { name: "Bob" });
    const today = seasonAt("daily", Date.now());
    const yesterday = seasonBefore(today)!.id;
    const key = (part: string) => `${prefix}:lb:seasonal:${part}`;
    const member = (seq: number, p: string) => `${String(seq).padStart(15, "0")}:${p}`;
    await command(target, "ZADD", key(`ranking:${yesterday}`), -50, member(2, "p2"), -40, member(1, "p1"));
    await command(target, "DEL", key(`ranking:${today.id}`));
    await command(
      target,
      "HSET",
      key("players"),
      "p1",
      `1j:${member(1, "p1")}|${yesterday}||`,
      "p2",
      `1j:${member(2, "p2")}|${yesterday}||`,
    );
    await send("POST", "/v1/leaderboards/seasonal/scores", KEYS.ingest, {
      items: [
        { player: "p1", by: 30 },
        { player: "p2", by: 10 },
      ],
    });

    // Pickers are re-read every 30 s: ask now rather than wait for it.
    await page.getByRole("button", { name: "Refresh now" }).click();
    await pick(page, "leaderboard", "seasonal");
    const rows = () => cells(panel(page, "leaderboard").locator("tbody tr"));
    await expect.poll(rows, WAIT).toEqual([
      ["1", "p1", "Ada", "30", "▲1"],
      ["2", "p2", "Bob", "10", "▼1"],
    ]);
    const season = panel(page, "leaderboard").locator("select.season");
    expect(await season.inputValue()).toBe("current");
    await season.selectOption("previous");
    await expect.poll(rows, WAIT).toEqual([
      ["1", "p2", "Bob", "50", ""],
      ["2", "p1", "Ada", "40", ""],
    ]);
    await page.screenshot({ path: resolve(ARTIFACTS, "dashboard-seasons.png"), fullPage: true });
    await panel(page, "leaderboard").locator("select.season").selectOption("current");
    await pick(page, "leaderboard", "arena");
    await expect.poll(() => panel(page, "leaderboard").locator("tbody tr").count(), WAIT).toBe(3);
    expect(pageErrors).toEqual([]);
  });

  it("shows the error state for a wrong key and recovers with the right one", async () => {
    await page.getByRole("button", { name: "Change key" }).click();
    await enterKey(page, "not-a-real-key");
    await expect.poll(() => state(page), WAIT).toBe("auth");
    const alert = page.getByRole("alert");
    expect(await alert.isVisible()).toBe(true);
    expect(await alert.textContent()).toMatch(/refused the key \(401\)/);
    expect(await page.getByLabel("Read API key").isVisible()).toBe(true);
    // A refused key is not kept: reloading asks again instead of failing again.
    expect(await page.evaluate(() => localStorage.getItem("edgestats.dashboard.readKey"))).toBeNull();
    await page.screenshot({ path: resolve(ARTIFACTS, "dashboard-wrong-key.png"), fullPage: true });

    await enterKey(page, KEYS.read);
    await expect.poll(() => stateWithAlert(page), WAIT).toBe("live");
    expect(await alert.isVisible()).toBe(false);
    expect(await text(page, "#panel-trending .bars li .value")).toBe("13");
  });

  it("attack: an admin key entered in the dashboard is refused with the reason and never stored in localStorage", async () => {
    await page.getByRole("button", { name: "Change key" }).click();
    await enterKey(page, KEYS.admin);
    await expect.poll(() => state(page), WAIT).toBe("auth");
    const alert = page.getByRole("alert");
    expect(await alert.textContent()).toMatch(/refused the key \(403\).*read keys only/);
    expect(await page.evaluate(() => localStorage.getItem("edgestats.dashboard.readKey"))).toBeNull();
    expect(await page.getByLabel("Read API key").isVisible()).toBe(true);

    await enterKey(page, KEYS.read);
    await expect.poll(() => stateWithAlert(page), WAIT).toBe("live");
    expect(await page.evaluate(() => localStorage.getItem("edgestats.dashboard.readKey"))).toBe(KEYS.read);
  });

  it("fits a phone screen, keeps the key across visits, and marks a missing feature as not available", async () => {
    const phone = await dev.browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
      storageState: await desktop.storageState(),
    });
    const mobile = await phone.newPage();
    watchErrors(mobile, pageErrors);
    // As if this deployment had no histograms feature: its list endpoint is a 404.
    await mobile.route("**/v1/histograms", (route) =>
      route.fulfill({
        status: 404,
        contentType: "application/json",
        body: JSON.stringify({ error: { code: "not_found", message: "No route" } }),
      }),
    );
    await mobile.goto(`${dev.url}/`);
    // The key from the first visit is used without asking.
    await expect.poll(() => stateWithAlert(mobile), WAIT).toBe("live");
    expect(await mobile.getByLabel("Read API key").isVisible()).toBe(false);
    // The pickers remember what was chosen.
    await expect.poll(() => mobile.locator("#pick-leaderboard").inputValue(), WAIT).toBe("arena");
    await expect.poll(() => text(mobile, '#panel-presence [data-stat="online"] dd'), WAIT).toBe("5");
    expect(await panel(mobile, "histogram").getAttribute("data-state")).toBe("unavailable");
    expect(await text(mobile, "#panel-histogram [data-role=body]")).toMatch(/Not available/);
    const overflow = await mobile.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    // Every control has an accessible name.
    for (const id of ["trending", "presence", "leaderboard", "histogram", "counter"]) {
      expect(
        await mobile
          .getByLabel(/Stream|Room|Board|Histogram|Counter/)
          .and(mobile.locator(`#pick-${id}`))
          .count(),
      ).toBe(1);
    }
    await mobile.screenshot({ path: resolve(ARTIFACTS, "dashboard-phone.png"), fullPage: true });
    await phone.close();
    expect(pageErrors).toEqual([]);
  });

  it("says the API is unreachable when the server goes away, keeping the last numbers", async () => {
    await dev.wrangler!.stop();
    await expect.poll(() => state(page), WAIT).toBe("unreachable");
    expect(await page.getByRole("alert").textContent()).toMatch(
      /API is unreachable .*Showing data from \d\d:\d\d:\d\d/,
    );
    expect(await text(page, "#panel-trending .bars li .value")).toBe("13");
    expect(await panel(page, "trending").getAttribute("data-state")).toBe("stale");
    await page.screenshot({ path: resolve(ARTIFACTS, "dashboard-unreachable.png"), fullPage: true });
  });
});
