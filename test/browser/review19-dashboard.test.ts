/**
 * Review 19: the dashboard in headless Chromium with a read key only, after review 15. One
 * `wrangler dev` serving the bundled Worker against the local Upstash server and a real
 * redis-server; data goes in through the HTTP API. Checked: an empty deployment, where the key
 * goes (requests, storage, console), 1,001 counters (one list page, not every page), markup and
 * unicode in counter members, a refresh whose requests fail (a 5xx / 429 envelope injected at the
 * browser's network layer with page.route, the only way to fail one panel's request on a healthy
 * Worker; review 15 covers the real limiter and a real 503) and its recovery, and times in a
 * browser 14 h ahead of UTC. Kept light: 2 cores are shared.
 *
 * Bugs are `it.fails` tests asserting the right behaviour, with severity and fix above each.
 */
import type { BrowserContext, Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { dashboardDev } from "./helpers/dashboard-dev.ts";
import { WAIT, openDashboard as open, panel, pick, refreshes, state, watchErrors } from "./helpers/page.ts";

const suffix = Math.random().toString(36).slice(2, 10);
const KEYS = { ingest: `r19-ingest-${suffix}`, read: `r19-read-key-${suffix}`, admin: `r19-admin-${suffix}` };
const dev = dashboardDev("review19-dashboard", KEYS);
const send = dev.send;

let context: BrowserContext;
let page: Page;
const pageErrors: string[] = [];
/** Every request the main page made: method, URL, headers. */
const requests: { method: string; url: string; headers: Record<string, string> }[] = [];
const consoleText: string[] = [];

// Members that must show as the exact text: markup, a script, entities, bidi, emoji, combining marks.
const NASTY = [
  "<script>window.__r19='script'</script>",
  "<img src=x onerror=\"window.__r19='img'\">",
  "&lt;b&gt;&amp;",
  "Zoë 🎉 \u202Egnp.exe",
  "e\u0301\u0301 日本語",
];
const COUNTERS = 1001;
const name = (i: number) => `c-${String(i).padStart(4, "0")}`;

beforeAll(async () => {
  context = await dev.browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  watchErrors(page, pageErrors);
  page.on("request", (r) => requests.push({ method: r.method(), url: r.url(), headers: r.headers() }));
  page.on("console", (m) => consoleText.push(m.text()));
});

describe("dashboard review 19 (Chromium, read key only)", () => {
  it("empty deployment: every panel says how to put data in, pickers disabled, CSV disabled, page live", async () => {
    await open(page, dev.url, KEYS.read);
    await expect.poll(() => state(page), WAIT).toBe("live");
    const panels = page.locator("[data-panel]");
    expect(await panels.evaluateAll((s) => s.map((e) => e.getAttribute("data-state")))).toEqual([
      "empty",
      "empty",
      "empty",
      "empty",
      "empty",
    ]);
    for (const id of ["trending", "presence", "leaderboard", "histogram", "counter"]) {
      const hint = await panel(page, id).getAttribute("data-hint");
      expect(await panel(page, id).locator("[data-role=body]").textContent()).toBe(hint);
      expect(await panel(page, id).locator("select").first().isDisabled()).toBe(true);
      expect(
        await panel(page, id)
          .getByRole("button", { name: /as CSV/ })
          .isDisabled(),
      ).toBe(true);
    }
    expect(await page.locator("#alert").isHidden()).toBe(true);
    expect(pageErrors).toEqual([]);
  });

  it("markup and unicode in counter members are shown as the exact text and run nothing", async () => {
    await send("POST", "/v1/counters/nasty/incr", KEYS.ingest, {
      items: NASTY.map((member, i) => ({ member, by: NASTY.length - i })),
    });
    await page.getByRole("button", { name: "Refresh now" }).click();
    await pick(page, "counter", "nasty");
    await expect.poll(() => panel(page, "counter").locator(".bars li .label").allTextContents(), WAIT).toEqual(NASTY);
    expect(await page.locator("main script, main img").count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __r19?: unknown }).__r19)).toBeUndefined();
    expect(pageErrors).toEqual([]);
  });

  it("a refresh whose requests fail shows the API's envelope message, keeps the numbers, and recovers", async () => {
    await pick(page, "counter", "nasty");
    await expect.poll(() => panel(page, "counter").getAttribute("data-state"), WAIT).toBe("live");
    // 1. one panel's read answers a 500 envelope: that panel is stale with the message, the page partly updated
    const envelope500 = { error: { code: "internal_error", message: "Injected failure r19." } };
    await page.route("**/v1/counters/*/top*", (route) =>
      route.fulfill({ status: 500, contentType: "application/json", body: JSON.stringify(envelope500) }),
    );
    await page.getByRole("button", { name: "Refresh now" }).click();
    await expect.poll(() => panel(page, "counter").getAttribute("data-state"), WAIT).toBe("stale");
    expect(await panel(page, "counter").locator(".problem").textContent()).toContain("Injected failure r19.");
    expect(await panel(page, "counter").locator(".bars li .label").allTextContents()).toEqual(NASTY);
    expect(await state(page)).toBe("degraded");
    expect(await page.locator("#alert").textContent()).toContain("Injected failure r19.");

    // 2. every API request answers 429 with the envelope and Retry-After: the page says rate limited
    await page.unroute("**/v1/counters/*/top*");
    const envelope429 = { error: { code: "rate_limited", message: "Too many requests r19." } };
    await page.route("**/v1/**", (route) =>
      route.fulfill({
        status: 429,
        contentType: "application/json",
        headers: { "retry-after": "1" },
        body: JSON.stringify(envelope429),
      }),
    );
    await page.getByRole("button", { name: "Refresh now" }).click();
    await expect
      .poll(() => page.locator("#alert").textContent(), WAIT)
      .toMatch(/Rate limited \(429\): Too many requests r19\./);
    expect(await panel(page, "counter").locator(".bars li .label").allTextContents()).toEqual(NASTY);

    // 3. a 502 from a proxy, not JSON: every panel failed, the page says unreachable with the status
    await page.unroute("**/v1/**");
    await page.route("**/v1/**", (route) =>
      route.fulfill({ status: 502, contentType: "text/html", body: "<h1>Bad gateway</h1>" }),
    );
    await page.getByRole("button", { name: "Refresh now" }).click();
    await expect.poll(() => state(page), WAIT).toBe("unreachable");
    expect(await page.locator("#alert").textContent()).toContain("HTTP 502");
    expect(await page.locator("#alert").textContent()).not.toContain("<h1>");

    // 4. the API is back: the next refresh is live, the alert gone, every panel fresh
    await page.unroute("**/v1/**");
    const done = await refreshes(page);
    await page.getByRole("button", { name: "Refresh now" }).click();
    await expect.poll(() => refreshes(page), WAIT).toBeGreaterThan(done);
    await expect.poll(() => state(page), WAIT).toBe("live");
    expect(await page.locator("#alert").isHidden()).toBe(true);
    expect(await panel(page, "counter").getAttribute("data-state")).toBe("live");
    expect(await panel(page, "counter").locator(".problem").count()).toBe(0);
    // the key survived every failure (none was a 401/403)
    expect(await page.evaluate(() => localStorage.getItem("edgestats.dashboard.readKey"))).toBe(KEYS.read);
  });

  it("1,001 counters: a list refresh is one request for one page, not a walk of every page", async () => {
    // c-0000 written first and alone: the list is newest first, so it is the 1,001st, on page 2.
    await send("POST", `/v1/counters/${name(0)}/incr`, KEYS.ingest, { member: "oldest", by: 7 });
    await new Promise((r) => setTimeout(r, 50));
    let next = 1;
    const worker = async () => {
      while (next < COUNTERS) {
        const i = next++;
        await send("POST", `/v1/counters/${name(i)}/incr`, KEYS.ingest, { member: "m", by: 1 });
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    const page2 = await send("GET", "/v1/counters?offset=1000", KEYS.read);
    expect(page2.counters).toContain(name(0));

    const before = requests.length;
    await page.getByRole("button", { name: "Refresh now" }).click();
    const picker = panel(page, "counter").locator("select").first();
    // the page's 1,000 names, and the counter shown ("nasty", written before all of them, so now
    // off the first page) kept at the end rather than swapped for another (review 19's fix)
    await expect.poll(() => picker.locator("option").count(), WAIT).toBe(1001);
    expect(await picker.locator("option").last().textContent()).toBe("nasty");
    expect(await picker.inputValue()).toBe("nasty");
    const lists = requests.slice(before).filter((r) => new URL(r.url).pathname === "/v1/counters");
    expect(lists.map((r) => new URL(r.url).search)).toEqual([""]);
    expect(await state(page)).toBe("live");
  });

  // FIXED (review 19's fixes: fillPicker keeps an off-page choice when the list has more pages).
  // Was BUG (low). With more counters than the list's first page (1,000, newest written first), a
  // counter chosen earlier that has not been written lately falls off the page: the dashboard then
  // silently shows another counter (main.browser.js `fillPicker` falls back to `names[0]` when the
  // stored choice is not in the list), and nothing can pick it again. The API has it (GET
  // /v1/counters?offset=1000 lists it, /top reads it).
  // Fix: main.browser.js `fillPicker`: keep the stored/current choice as an extra option when it is
  // not on the page (the loader reads it; a 404 already says "'x' is gone"), so paging stays one
  // request and nothing the person chose disappears.
  it("a stored choice that is not on the list's first page is still shown, not swapped for another", async () => {
    const chosen = await context.newPage();
    try {
      await chosen.goto(`${dev.url}/`);
      await chosen.evaluate(
        ([key, counter]) => {
          localStorage.setItem("edgestats.dashboard.readKey", key!);
          localStorage.setItem("edgestats.dashboard.selection", JSON.stringify({ counter }));
        },
        [KEYS.read, name(0)],
      );
      await chosen.reload();
      await expect.poll(() => state(chosen), WAIT).toBe("live");
      expect(await panel(chosen, "counter").locator("select").first().inputValue()).toBe(name(0));
      await expect
        .poll(() => panel(chosen, "counter").locator(".bars li .label").allTextContents(), WAIT)
        .toEqual(["oldest"]);
    } finally {
      await chosen.close();
    }
  });

  it("14 h ahead of UTC: a per-day counter shows the UTC day's bucket, says so, and times carry the UTC instant", async () => {
    await send("POST", "/v1/counters/daily19/incr", KEYS.ingest, { member: "today-utc", by: 2, period: "day" });
    const ahead = await dev.browser.newContext({
      timezoneId: "Pacific/Kiritimati",
      storageState: await context.storageState(),
    });
    const p = await ahead.newPage();
    try {
      await p.goto(`${dev.url}/`);
      await pick(p, "counter", "daily19");
      await expect
        .poll(() => panel(p, "counter").locator(".bars li .label").allTextContents(), WAIT)
        .toEqual(["today-utc"]);
      expect(await panel(p, "counter").locator(".badge").textContent()).toBe("today (UTC)");
      const csvPath = await p.evaluate(() => new Date().getTimezoneOffset());
      expect(csvPath).toBe(-14 * 60);
      // the "as of" time: the machine-readable instant is UTC (ISO, Z), the text is the local clock
      const time = panel(p, "counter").locator("[data-role=meta] time");
      const iso = (await time.getAttribute("datetime")) ?? "";
      expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const local = await p.evaluate(
        (at) =>
          new Date(at).toLocaleTimeString(undefined, {
            hour: "2-digit",
            minute: "2-digit",
            second: "2-digit",
            hour12: false,
          }),
        iso,
      );
      expect(await time.textContent()).toBe(`as of ${local}`);
      expect(Math.abs(Date.parse(iso) - Date.now())).toBeLessThan(120_000);
    } finally {
      await ahead.close();
    }
  });

  it("the read key went only in the Authorization header of same-origin GETs: never a URL, the console or other storage", async () => {
    const origin = new URL(dev.url).origin;
    const api = requests.filter((r) => new URL(r.url).pathname.startsWith("/v1/"));
    expect(api.length).toBeGreaterThan(20);
    expect(new Set(api.map((r) => r.method))).toEqual(new Set(["GET"]));
    for (const r of requests) {
      expect(r.url).not.toContain(KEYS.read);
      expect(r.url.startsWith(origin) || r.url.startsWith("blob:") || r.url.startsWith("data:")).toBe(true);
      const carries = Object.entries(r.headers).filter(([, v]) => v.includes(KEYS.read));
      if (new URL(r.url).pathname.startsWith("/v1/"))
        expect(carries).toEqual([["authorization", `Bearer ${KEYS.read}`]]);
      else expect(carries).toEqual([]);
    }
    expect(consoleText.filter((t) => t.includes(KEYS.read))).toEqual([]);
    const stored = await page.evaluate(() => ({
      local: Object.keys(localStorage).sort(),
      session: Object.keys(sessionStorage),
      cookie: document.cookie,
      url: location.href,
    }));
    // only the documented names (docs/dashboard.md): the key, the pickers' choices, the views
    expect(stored.local.every((k) => /^edgestats\.dashboard\.(readKey|selection|views)$/.test(k))).toBe(true);
    expect(stored.session).toEqual([]);
    expect(stored.cookie).toBe("");
    expect(stored.url).not.toContain(KEYS.read);
    expect((await context.cookies()).length).toBe(0);
  });

  it("/docs renders in Chromium with its own styles, no script, and no CSP violation on either page", async () => {
    const p = await context.newPage();
    const violations: string[] = [];
    p.on("console", (m) => {
      if (/Content Security Policy|Refused to/.test(m.text())) violations.push(m.text());
    });
    try {
      const res = await p.goto(`${dev.url}/docs`);
      expect(res?.status()).toBe(200);
      expect(await p.locator("h1").textContent()).toBe("edgestats API");
      expect(await p.locator(".op").count()).toBeGreaterThan(50);
      // the inline <style> applied (a CSP on /docs must keep allowing it)
      expect(await p.locator("body").evaluate((b) => getComputedStyle(b).maxWidth)).toBe("960px");
      expect(await p.locator("script").count()).toBe(0);
      await p.goto(`${dev.url}/`);
      await expect.poll(() => state(p), WAIT).toBe("live");
      expect(violations).toEqual([]);
    } finally {
      await p.close();
    }
  });
});
