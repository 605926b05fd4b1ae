/**
 * Periodic jobs broken half way by a storage fault, then run again: the end
 * state must equal that of a run that was never interrupted. Two identical
 * datasets under two prefixes; one job runs through the fault proxy (503 or a
 * lost response after a few round trips), the other straight through.
 */
import { describe, expect, it } from "vitest";
import { type Fault } from "../../dev/fault-proxy.ts";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { StorageUnavailableError } from "../../src/errors.ts";
import { createTrimJob } from "../../src/presence/jobs.ts";
import { heartbeat, history, stats as roomStats } from "../../src/presence/index.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import { compact as compactTrending, record as recordEvents, top as topTrending } from "../../src/trending/index.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("jobs", { timeoutMs: 2000 });
const T0 = Date.UTC(2026, 10, 22, 10, 20);
const STREAMS = Array.from({ length: 12 }, (_, i) => `s${i}`);
const ROOMS = Array.from({ length: 9 }, (_, i) => `r${i}`);
/** The fault proxy in front of the local Upstash server, and the library's client through it. */
const faults = lib.faultProxy();

function ctxOf(prefix: string, now: number, viaProxy: boolean): Ctx {
  return { redis: viaProxy ? faults.redis : lib.redis, prefix, now };
}

/** A fresh prefix of its own (deleted after the file). */
function newPrefix(label: string): string {
  return lib.ctx(T0, label).prefix;
}

/** Three finished hours of events over 12 streams, 15 members each with distinct counts. */
async function seedTrending(prefix: string): Promise<void> {
  for (let h = 0; h < 3; h++) {
    const ctx = ctxOf(prefix, T0 + h * HOUR, false);
    for (const [s, stream] of STREAMS.entries()) {
      const events = Array.from({ length: 15 }, (_, m) => ({
        member: `m${m}`,
        count: 1 + ((m * 7 + s * 3 + h * 5) % 23),
      }));
      await recordEvents(ctx, stream, events, { retentionHours: 50 });
    }
  }
}

async function tops(prefix: string, now: number) {
  const ctx = ctxOf(prefix, now, false);
  return Promise.all(
    STREAMS.map((s) =>
      topTrending(ctx, s, { retentionHours: 50, n: 10, windowHours: 24 }).then(({ generatedAt: _, ...rest }) => rest),
    ),
  );
}

describe("trending compaction interrupted half way", () => {
  const cases: [string, Fault][] = [
    ["503 after a few round trips", { kind: "status", status: 503 }],
    ["a lost response after a few round trips (the step happened)", { kind: "lose-response" }],
  ];
  it.each(cases)("%s: the next run finishes it and the result equals an uninterrupted run", async (_, fault) => {
    const control = newPrefix("jobs-ctl");
    const broken = newPrefix("jobs-brk");
    await seedTrending(control);
    await seedTrending(broken);
    const now = T0 + 3 * HOUR + 5 * MINUTE;
    const options = { retentionHours: 50, keep: 5, batchSize: 3 };

    const reference = await compactTrending(ctxOf(control, now, false), options);
    expect(reference.more).toBe(false);
    expect(reference.streams).toBe(STREAMS.length);
    expect(reference.membersRemoved).toBeGreaterThan(0);

    // Every call from the 4th on fails until healed, however often the client re-sends it.
    faults.proxy.set({ fault, after: 3 });
    const error = await compactTrending(ctxOf(broken, now, true), options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageUnavailableError);
    faults.proxy.heal();

    const rerun = await compactTrending(ctxOf(broken, now, true), options);
    expect(rerun.more).toBe(false);
    expect(rerun.streams).toBeLessThan(STREAMS.length); // part was done before the fault
    expect(rerun.streams).toBeGreaterThan(0);
    const third = await compactTrending(ctxOf(broken, now, true), options);
    expect(third.streams).toBe(0); // nothing left, nothing redone

    expect(await tops(broken, now)).toEqual(await tops(control, now));
  });
});

describe("presence trimming interrupted half way", () => {
  it("a rerun of the minute yields the same rooms, counts and history as one clean run", async () => {
    const control = newPrefix("trim-ctl");
    const broken = newPrefix("trim-brk");
    const config = readConfig({ PRESENCE_TIMEOUT_SECONDS: "60" });
    for (const prefix of [control, broken]) {
      for (const [r, room] of ROOMS.entries()) {
        // Half the ids go idle two minutes before the job; the rest stay online.
        await heartbeat(
          ctxOf(prefix, T0 - 2 * MINUTE, false),
          room,
          Array.from({ length: 4 + r }, (_, i) => `old${i}`),
          { timeoutSeconds: 60 },
        );
        await heartbeat(
          ctxOf(prefix, T0, false),
          room,
          Array.from({ length: 2 + r }, (_, i) => `new${i}`),
          { timeoutSeconds: 60 },
        );
      }
    }
    const job = createTrimJob({ chunkRooms: 2 });
    const now = T0 + 30_000;
    const reference = await job(ctxOf(control, now, false), config);
    expect(reference.rooms).toBe(ROOMS.length);

    faults.proxy.set({ fault: { kind: "lose-response" }, after: 2 });
    expect(await job(ctxOf(broken, now, true), config).catch((e: unknown) => e)).toBeInstanceOf(
      StorageUnavailableError,
    );
    faults.proxy.heal();
    const rerun = await job(ctxOf(broken, now, true), config);
    expect(rerun.online).toBe(reference.online);

    for (const room of ROOMS) {
      const [a, b] = await Promise.all(
        [control, broken].map((p) => roomStats(ctxOf(p, now, false), room, { timeoutSeconds: 60 })),
      );
      expect(b).toEqual(a);
      const [ha, hb] = await Promise.all([control, broken].map((p) => history(ctxOf(p, now, false), room)));
      expect(hb).toEqual(ha);
    }
  });
});
