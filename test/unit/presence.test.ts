import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/errors.ts";
import { allRoomKeys, dayKeys, legacyRegistryKeys, registryKeys, roomKeys } from "../../src/presence/keys.ts";
import { minuteOf } from "../../src/presence/presence.ts";
import { requireIds } from "../../src/presence/validate.ts";
import { NAME_PATTERN } from "../../src/validation.ts";

describe("presence keys", () => {
  it("keeps registry keys out of any room's key space", () => {
    const registry = [...Object.values(registryKeys("es")), ...legacyRegistryKeys("es")];
    for (const key of registry) {
      const part = key.split(":")[2] ?? "";
      expect(NAME_PATTERN.test(part)).toBe(false);
    }
    expect(roomKeys("es", "lobby").seen).toBe("es:presence:lobby:seen");
    expect(dayKeys("es", "lobby", Date.UTC(2026, 10, 22, 23, 59)).daily).toBe("es:presence:lobby:daily:20261122");
  });

  it("names every key of a room for deletion: room keys, daily keys of three days and tomorrow, keys of earlier versions", () => {
    const keys = allRoomKeys("es", "r", Date.UTC(2026, 0, 1, 0, 30));
    expect(keys).toEqual([
      "es:presence:r:seen",
      "es:presence:r:ids",
      "es:presence:r:names",
      "es:presence:r:seq",
      "es:presence:r:history",
      "es:presence:r:days",
      "es:presence:r:daily:20260101",
      "es:presence:r:daily:20251231",
      "es:presence:r:daily:20251230",
      "es:presence:r:daily:20260102",
      "es:presence:r:online",
      "es:presence:r:day:20260101",
      "es:presence:r:au:20260101",
      "es:presence:r:day:20251231",
      "es:presence:r:au:20251231",
      "es:presence:r:day:20251230",
      "es:presence:r:au:20251230",
    ]);
  });

  it("labels history points by the minute", () => {
    expect(minuteOf(Date.UTC(2026, 10, 22, 12, 30, 59, 999))).toBe(Date.UTC(2026, 10, 22, 12, 30));
  });
});

describe("id validation", () => {
  const problemOf = (ids: string[]) => {
    try {
      requireIds(ids);
      return null;
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      return (error as ValidationError).details;
    }
  };

  it("accepts 1..1000 ids of 1..256 UTF-8 bytes", () => {
    expect(problemOf(["a", "é".repeat(128), "😀".repeat(64)])).toBeNull();
    expect(problemOf(Array.from({ length: 1000 }, (_, i) => `u${i}`))).toBeNull();
  });

  it("names every bad id of a batch", () => {
    expect(problemOf(["ok", "", "x".repeat(257), "tab\there"])).toEqual([
      { path: "ids.1", message: "must not be empty" },
      { path: "ids.2", message: "must be at most 256 UTF-8 bytes" },
      { path: "ids.3", message: "must not contain control characters" },
    ]);
    expect(problemOf([])?.[0]?.path).toBe("ids");
    expect(problemOf(Array.from({ length: 1001 }, (_, i) => `u${i}`))?.[0]?.path).toBe("ids");
  });
});
