/**
 * The dashboard tests' setup: the Worker bundled once and served by `wrangler dev` against the
 * local Upstash server, under a key prefix of its own, and a headless Chromium. The dashboard,
 * review 3 and review 15 files each had their own copy of the start and the clean-up; each still
 * seeds its own data and opens its own pages in a beforeAll registered after this one.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { bundleWorker, startWranglerDev, type WranglerDev } from "../../../dev/wrangler.ts";
import { deleteUnder, requireTarget, uniquePrefix } from "../../helpers/upstash-rest.ts";
import { workerVars, type DevKeys } from "../../helpers/wrangler-dev.ts";
import { apiClient } from "./api.ts";
import { launchChromium } from "./page.ts";

export interface DashboardDev {
  target: ReturnType<typeof requireTarget>;
  prefix: string;
  /** The local Upstash server counts requests per token tag: this Worker's Redis traffic is tagged with it. */
  tag: string;
  /** The bundled Worker, for a test that starts a Worker of its own with other vars. */
  readonly script: string;
  /** The Worker's vars (`keys`, the prefix, Redis under the tag) with `extra` on top. */
  vars(extra?: Record<string, string>): Record<string, string>;
  /** Set once beforeAll has started it (the tests may stop it themselves). */
  wrangler: WranglerDev | undefined;
  readonly url: string;
  readonly browser: Browser;
  /** JSON client of the Worker's HTTP API (./api.ts), for seeding data. */
  send: <T = any>(method: string, path: string, key: string, body?: unknown) => Promise<T>;
}

/**
 * Bundles the Worker and starts wrangler dev and Chromium (beforeAll); closes both, deletes the
 * prefix's keys and the bundle afterAll. Bundled once and served with --no-bundle: a watched
 * bundle would reload the Worker mid-run whenever someone edits a source file.
 */
export function dashboardDev(label: string, keys: DevKeys): DashboardDev {
  const target = requireTarget(process.env.EDGESTATS_UPSTASH_URL, process.env.EDGESTATS_UPSTASH_TOKEN);
  const prefix = uniquePrefix(label);
  const tag = prefix.replace(/\./g, "_");
  const bundleDir = mkdtempSync(join(tmpdir(), `edgestats-${label}-bundle-`));
  let script: string | undefined;
  let browser: Browser | undefined;
  const started = <T>(what: string, value: T | undefined): T => {
    if (value === undefined) throw new Error(`${what}: not started (beforeAll failed or has not run)`);
    return value;
  };
  const dev: DashboardDev = {
    target,
    prefix,
    tag,
    get script() {
      return started("bundle", script);
    },
    vars: (extra = {}) => workerVars({ url: target.url, token: `${target.token}.${tag}` }, keys, prefix, extra),
    wrangler: undefined,
    get url() {
      return started("wrangler dev", dev.wrangler).url;
    },
    get browser() {
      return started("Chromium", browser);
    },
    send: (method, path, key, body) => apiClient(dev.url)(method, path, key, body),
  };
  beforeAll(async () => {
    script = bundleWorker(bundleDir);
    dev.wrangler = await startWranglerDev({ script, vars: dev.vars() });
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await dev.wrangler?.stop();
    await deleteUnder(target, prefix);
    rmSync(bundleDir, { recursive: true, force: true });
  });
  return dev;
}
