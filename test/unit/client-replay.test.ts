import { describe, expect, it } from "vitest";
import { createClient, ReplaySummarisedError } from "../../src/client.ts";

describe("typed client: a retried big write answered by a summarised replay", () => {
  it("throws ReplaySummarisedError with the summary instead of returning a body of another shape", async () => {
    let attempts = 0;
    const summary = { bytes: 31_000, sha1: "ab".repeat(20), items: 1000 };
    const client = createClient({
      baseUrl: "https://stats.example.com",
      key: "client-ingest-key-01",
      backoffMs: () => 0,
      // The first attempt is applied but its answer is lost; the retry gets the service's summarised replay.
      fetch: async (request: Request) => {
        attempts++;
        expect(request.headers.get("idempotency-key")).toBeTruthy();
        if (attempts === 1) throw new TypeError("network connection lost");
        return new Response(JSON.stringify({ replayed: true, summarised: true, summary, message: "…" }), {
          status: 200,
          headers: {
            "content-type": "application/json",
            "idempotent-replayed": "true",
            "idempotent-summarised": "true",
          },
        });
      },
    });
    const items = Array.from({ length: 1000 }, (_, i) => ({ member: `m${i}` }));
    const error = await client.counters.incr("c", items).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ReplaySummarisedError);
    expect((error as ReplaySummarisedError).summary).toEqual(summary);
    expect((error as ReplaySummarisedError).code).toBe("replay_summarised");
    expect(attempts).toBe(2);
  });
});
