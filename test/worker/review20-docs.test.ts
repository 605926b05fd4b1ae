/**
 * Review 20 (a new user's journey): running every example of README and docs against
 * `npm run dev` in a fresh clone, one behaviour differed between the list endpoints. The lists are
 * beyond /work/shared/API.md, so docs/trending.md now says it; the test pins the inconsistency.
 */
import { describe, expect, it } from "vitest";
import { createTestApi, type TestApi, cleanedUpAfterAll } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string) => track(createTestApi({ label }));

describe("review 20: an empty `cursor=` on the paged lists", () => {
  it("presence rooms and leaderboards read an empty cursor as the first page (docs/presence.md, docs/leaderboards.md examples)", async () => {
    const api = newApi("r20-cursor-ok");
    await api.post("/v1/presence/lobby/heartbeats", { id: "u" });
    await api.put("/v1/leaderboards/game", {}, { key: "admin" });
    await api.put("/v1/leaderboards/game/players/p1", { name: "Ann" });
    const rooms = await api.get("/v1/presence?limit=1000&cursor=");
    expect(rooms.status).toBe(200);
    expect(rooms.body.rooms).toEqual(["lobby"]);
    const boards = await api.get("/v1/leaderboards?limit=1000&cursor=");
    expect(boards.status).toBe(200);
    expect(boards.body.boards).toEqual(["game"]);
  });

  // Severity: low. `GET /v1/trending?cursor=` is a 400 (the cursor must be a stream name), while
  // /v1/presence and /v1/leaderboards take `cursor=` as the first page, so a client that pages all
  // three with `?cursor=${next ?? ""}` fails on trending only (docs/trending.md showed
  // `?limit=&cursor=`, which is a 400 as written). Suggested fix: StreamsQuery's precheck and
  // schema (functions/routes/trending-schemas.ts) treat an empty cursor as absent.
  it.fails("trending reads an empty cursor as the first page too", async () => {
    const api = newApi("r20-cursor-trending");
    await api.post("/v1/trending/searches/events", { member: "a" });
    const page = await api.get("/v1/trending?limit=1000&cursor=");
    expect(page.status).toBe(200);
    expect(page.body).toEqual({ streams: ["searches"], nextCursor: null });
  });
});
