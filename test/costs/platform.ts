import type { CostArea } from "./types.ts";

/**
 * What the platform adds to or answers without a feature's script: the
 * Idempotency-Key prelude, /healthz, refusals. Asserted by
 * test/worker/costs-platform.test.ts.
 */
export const area: CostArea = {
  title: "Platform: Idempotency-Key, health, refusals",
  order: 5,
  rows: {
    idemFirst: {
      call: "Idempotency-Key on a write, extra over the same write without it",
      state: "first use of the key",
      roundTrips: 0,
      commands: 2,
      target: 2,
      extra: true,
      note: "Inside the write's own script: `GET` of the record (none yet), then `SET … EX 86400` of fingerprint + result. Measured as the difference between a counter increment with and without the header. A write whose result is known before it runs (histogram observe, trending ingest) needs 1: one `SET … NX EX 86400` writes its record before the body runs (a `GET` follows only when the key is taken).",
    },
    idemReplay: {
      call: "Idempotency-Key on a write, replay (same key and body)",
      state: "record exists",
      roundTrips: 1,
      commands: 2,
      note: "`EVALSHA` + `GET` of the record (a write whose result is known up front — histogram observe, trending ingest — first tries `SET … NX`: 3): the write's body does not run, whatever the write was (a 1,000-item batch too).",
    },
    idemConflict: {
      call: "Idempotency-Key reused with another body (409)",
      state: "record exists",
      roundTrips: 1,
      commands: 2,
    },
    healthz: {
      call: "`GET /healthz` (no key)",
      state: "any",
      roundTrips: 0,
      commands: 0,
      note: "Answered by the Worker alone.",
    },
    healthzDeep: {
      call: "`GET /healthz?deep=1` (any API key)",
      state: "any",
      roundTrips: 1,
      commands: 1,
      note: "One `PING`. Without a valid key it is a 401 and costs nothing.",
    },
    rejected: {
      call: "a refused request (401, 403, 400, 413, 415)",
      state: "any",
      roundTrips: 0,
      commands: 0,
      note: "Keys, scopes, bodies and parameters are checked before the first Redis call.",
    },
    dashboardPage: {
      call: "dashboard page and assets (`/`, `/dashboard.js`, `/dashboard.css`)",
      state: "any",
      roundTrips: 0,
      commands: 0,
    },
  },
};
