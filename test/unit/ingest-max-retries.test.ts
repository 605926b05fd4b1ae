/**
 * The consumer knows its last delivery only through INGEST_MAX_RETRIES (wrangler.toml [vars]),
 * which repeats the consumer's max_retries: they, and the library's default, must agree, or a
 * message would be dead-lettered early (var lower) or moved there by Queues uncounted (higher).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_RETRIES, isLastAttempt } from "../../src/ingest/dead-letter.ts";

const toml = readFileSync(join(import.meta.dirname, "..", "..", "wrangler.toml"), "utf8");

describe("ingest max_retries", () => {
  it("INGEST_MAX_RETRIES equals the ingest consumer's max_retries and DEFAULT_MAX_RETRIES", () => {
    const consumers = toml.split("[[queues.consumers]]").slice(1);
    const ingest = consumers.find((c) => /queue = "edgestats-ingest"/.test(c));
    const retries = Number(ingest?.match(/^max_retries = (\d+)/m)?.[1]);
    const variable = Number(toml.match(/^INGEST_MAX_RETRIES = "(\d+)"/m)?.[1]);
    expect(retries).toBe(10);
    expect(variable).toBe(retries);
    expect(DEFAULT_MAX_RETRIES).toBe(retries);
  });

  it("the last delivery is attempt max_retries + 1 (attempts count from 1)", () => {
    expect(isLastAttempt(1, 10)).toBe(false);
    expect(isLastAttempt(10, 10)).toBe(false);
    expect(isLastAttempt(11, 10)).toBe(true);
    expect(isLastAttempt(1, 0)).toBe(true);
  });
});
