/**
 * Review 3: the dashboard against hostile data, in headless Chromium against
 * `wrangler dev`, the local Upstash server and a real redis-server. Markup
 * written through the API (members, presence ids, player names, a histogram's
 * unit) must show as text and never run, both under the page's CSP and with
 * the CSP bypassed (so the textContent rendering is checked on its own), and
 * the read key must stay on this origin, out of URLs and cookies.
 */
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { dashboardDev } from "./helpers/dashboard-dev.ts";
import { WAIT, openDashboard, panel, pick, state } from "./helpers/page.ts";

const suffix = Math.random().toString(36).slice(2, 10);
const KEYS = { ingest: `r3-ingest-${suffix}`, read: `r3-read-key-${suffix}`, admin: `r3-admin-${suffix}` };

// Each payload sets its own flag, so a failure says which field was rendered as HTML.
const XSS = {
  trending: "<img src=x onerror=window.__pwned='trending'>",
  counter: "<svg onload=window.__pwned='counter'></svg>",
  presence: "<img src=x onerror=window.__pwned='presence'>",
  player: "<img src=x onerror=window.__pwned='player'>",
  unit: "<img src=x onerror=__pwned='u'>",
};

const dev = dashboardDev("review3-dashboard", KEYS);

beforeAll(async () => {
  const send = dev.send;
  await send("POST", "/v1/trending/hostile/events", KEYS.ingest, {
    events: [
      { member: XSS.trending, count: 3 },
      { member: "plain", count: 1 },
    ],
  });
  await send("POST", "/v1/counters/hostile/incr", KEYS.ingest, { items: [{ member: XSS.counter, by: 2 }] });
  await send("POST", "/v1/presence/hostile/heartbeats", KEYS.ingest, { ids: [XSS.presence] });
  await send("PUT", "/v1/histograms/hostile", KEYS.admin, { bucketWidth: 10, unit: XSS.unit });
  await send("POST", "/v1/histograms/hostile/observations", KEYS.ingest, { values: [{ value: 5 }, { value: 15 }] });
  await send("PUT", "/v1/leaderboards/hostile/players/p1", KEYS.ingest, {
    name: XSS.player,
    meta: { html: "<script>window.__pwned='meta'</script>" },
    score: 10,
  });
});

/** Opens the dashboard, enters the read key, shows every hostile panel, and checks the text and that nothing ran. */
async function renderHostile(p: Page) {
  await openDashboard(p, dev.url, KEYS.read);
  await expect.poll(() => state(p), WAIT).toBe("live");

  await pick(p, "trending", "hostile");
  await expect
    .poll(() => panel(p, "trending").locator(".bars li .label").allTextContents(), WAIT)
    .toEqual([XSS.trending, "plain"]);
  await pick(p, "counter", "hostile");
  await expect
    .poll(() => panel(p, "counter").locator(".bars li .label").allTextContents(), WAIT)
    .toEqual([XSS.counter]);
  await pick(p, "leaderboard", "hostile");
  await expect
    .poll(() => panel(p, "leaderboard").locator("tbody tr td:nth-child(3)").allTextContents(), WAIT)
    .toEqual([XSS.player]);
  await pick(p, "histogram", "hostile");
  await expect.poll(() => panel(p, "histogram").locator(".legend").textContent(), WAIT).toContain(XSS.unit);
  await pick(p, "presence", "hostile");
  await expect.poll(() => p.locator('#panel-presence [data-stat="online"] dd').textContent(), WAIT).toBe("1");

  // Rising renders members in a table of its own: the hostile member is new this hour.
  await panel(p, "trending").locator('button[data-view="rising"]').click();
  await expect.poll(() => panel(p, "trending").locator("td.member").allTextContents(), WAIT).toContain(XSS.trending);

  // Nothing became an element, nothing ran.
  expect(await p.locator("main img, main script, main iframe, main svg[onload], main [onerror]").count()).toBe(0);
  expect(await p.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned)).toBeUndefined();
}

describe("dashboard against hostile data (review 3)", () => {
  it("shows markup in members, names and units as text under the CSP, and sends the key only to its own origin", async () => {
    const context = await dev.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const violations: string[] = [];
    const requests: { url: string; auth: string | undefined }[] = [];
    page.on("request", (r) => requests.push({ url: r.url(), auth: r.headers()["authorization"] }));
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await renderHostile(page);

    const origin = new URL(dev.url).origin;
    expect(requests.length).toBeGreaterThan(5);
    for (const r of requests) {
      // blob: downloads aside, every request is to this origin, and no URL carries the key
      if (!r.url.startsWith("blob:")) expect(new URL(r.url).origin).toBe(origin);
      expect(r.url).not.toContain(KEYS.read);
      if (r.auth !== undefined) expect(r.auth).toBe(`Bearer ${KEYS.read}`);
    }
    // the key is sent only to the API, never with the page or its assets
    for (const r of requests.filter((r) => !new URL(r.url).pathname.startsWith("/v1/")))
      expect(r.auth, r.url).toBeUndefined();
    // kept in localStorage only: no cookie, no sessionStorage, not in the page's URL or HTML
    expect(await page.evaluate(() => localStorage.getItem("edgestats.dashboard.readKey"))).toBe(KEYS.read);
    expect(await context.cookies()).toEqual([]);
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(KEYS.read);
    expect(page.url()).not.toContain(KEYS.read);
    expect(await page.content()).not.toContain(KEYS.read);
    // the page itself needs no inline script or style: nothing of its own was blocked
    expect(violations).toEqual([]);
    // control: under the page's CSP even markup injected as HTML does not run its handler
    await page.evaluate(() => {
      document.body.insertAdjacentHTML("beforeend", "<img src=x onerror=window.__pwned='control'>");
    });
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned)).toBeUndefined();
    await context.close();
  });

  it("renders the same data inertly with the CSP bypassed: the text rendering alone keeps it safe", async () => {
    const context = await dev.browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    const page = await context.newPage();
    await renderHostile(page);
    // control: without the CSP the same payload injected as HTML does run, so the checks above could see it
    await page.evaluate(() => {
      document.body.insertAdjacentHTML("beforeend", "<img src=x onerror=window.__pwned='control'>");
    });
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned), WAIT)
      .toBe("control");
    await context.close();
  });

  it("refuses to be framed by another page (clickjacking): the frame never shows the key form", async () => {
    const context = await dev.browser.newContext();
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on("console", (m) => {
      if (/frame-ancestors|X-Frame-Options|Refused to (display|frame)/i.test(m.text())) blocked.push(m.text());
    });
    // about:blank is another origin than the dashboard's
    await page.setContent(`<iframe id="f" src="${dev.url}/" width="800" height="600"></iframe>`, {
      waitUntil: "load",
    });
    await expect.poll(() => blocked.length, WAIT).toBeGreaterThan(0);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    expect(frame).toBeDefined();
    expect(await frame!.locator("#key-form").count()).toBe(0);
    await context.close();
  });
});
