/**
 * Reading and driving the dashboard page in the browser tests (dashboard, review 3, review 15).
 * Each file had its own copy of these; one copy keeps the selectors and the waits the same
 * everywhere, so a change to the page's markup is made here once.
 */
import { readFileSync } from "node:fs";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { expect } from "vitest";

/**
 * How long a poll waits for the page to change. Generous: a refresh is 5 s, a cached trending
 * answer may be up to 5 s older, and 2 cores are shared.
 */
export const WAIT = { timeout: 30_000, interval: 250 };

/** The system Chromium, headless; no background traffic of its own to confuse request counts. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}

/**
 * Collects the page's uncaught errors and console errors into `errors`, so a test can assert
 * there were none. A refused request logs a network error by design (the wrong-key and offline
 * checks); anything else is a bug.
 */
export function watchErrors(p: Page, errors: string[]): void {
  p.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  p.on("console", (msg) => {
    if (msg.type() === "error" && !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(msg.text()))
      errors.push(`console: ${msg.text()}`);
  });
}

export const panel = (p: Page, id: string) => p.locator(`#panel-${id}`);

/** The trimmed text of the first match of `selector` ("" when it has none). */
export const text = async (p: Page, selector: string) =>
  ((await p.locator(selector).first().textContent()) ?? "").trim();

/** The page's overall state: idle, live, auth, degraded, unreachable… (body[data-state]). */
export const state = (p: Page) => p.locator("body").getAttribute("data-state");

/** The page's state with its alert, so a failed wait says what the page said. */
export const stateWithAlert = async (p: Page) =>
  `${await state(p)}${(await p.locator("#alert").textContent()) ? `: ${await p.locator("#alert").textContent()}` : ""}`;

/** How many refreshes the page has finished (body[data-refreshes]); waiting on it avoids fixed sleeps. */
export const refreshes = async (p: Page) => Number((await p.locator("body").getAttribute("data-refreshes")) ?? 0);

export async function enterKey(p: Page, key: string): Promise<void> {
  await p.getByLabel("Read API key").fill(key);
  await p.getByRole("button", { name: "Save key" }).click();
}

/** Loads the dashboard at `base` and enters `key` (the caller waits for the state it expects). */
export async function openDashboard(p: Page, base: string, key: string): Promise<void> {
  await p.goto(`${base}/`);
  await enterKey(p, key);
}

/** Chooses `name` in panel `id`'s picker once the picker lists it (the lists are re-read every 30 s). */
export async function pick(p: Page, id: string, name: string): Promise<void> {
  const picker = p.locator(`#pick-${id}`);
  await expect.poll(() => picker.locator("option").allTextContents(), WAIT).toContain(name);
  await picker.selectOption(name);
}

/** Clicks panel `id`'s CSV button once it is enabled; the file's suggested name and its text. */
export async function downloadCsv(p: Page, id: string): Promise<{ name: string; text: string }> {
  const button = panel(p, id).getByRole("button", { name: /as CSV/ });
  await expect.poll(() => button.isEnabled(), WAIT).toBe(true);
  const [download] = await Promise.all([p.waitForEvent("download"), button.click()]);
  return { name: download.suggestedFilename(), text: readFileSync(await download.path(), "utf8") };
}

/** The text of each cell of each row in `rows` (e.g. a panel's `tbody tr`), read in one round trip. */
export const cells = (rows: Locator): Promise<string[][]> =>
  rows.evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent ?? "")));
