/**
 * `node dev/lockfile-platforms.mjs` after any `npm install`.
 *
 * The registry this project is built against serves workerd only for Linux, so
 * `npm install` writes a lockfile without workerd's macOS/Windows entries and
 * `npm ci` then refuses it as "out of sync". This adds those optional entries
 * (os/cpu set, so npm skips them on Linux and fetches them on a Mac).
 */
import { readFileSync, writeFileSync } from "node:fs";

const PLATFORMS = {
  "@cloudflare/workerd-darwin-64": { os: ["darwin"], cpu: ["x64"] },
  "@cloudflare/workerd-darwin-arm64": { os: ["darwin"], cpu: ["arm64"] },
  "@cloudflare/workerd-windows-64": { os: ["win32"], cpu: ["x64"] },
};
const lock = JSON.parse(readFileSync("package-lock.json", "utf8"));
let added = 0;
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const platform = PLATFORMS[dep];
    if (!platform) continue;
    const nested = `${path}/node_modules/${dep}`;
    const top = `node_modules/${dep}`;
    const existing = lock.packages[nested] ?? lock.packages[top];
    if (existing && existing.version === version) continue;
    const at = lock.packages[top] ? nested : top;
    lock.packages[at] = {
      version,
      ...platform,
      dev: entry.dev,
      license: "Apache-2.0",
      optional: true,
      engines: { node: ">=16" },
    };
    added++;
  }
}
writeFileSync("package-lock.json", JSON.stringify(lock, null, 2) + "\n");
console.log(`lockfile: added ${added} platform entries`);
