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

  // Was an it.fails (severity low): `GET /v1/trending?cursor=` was a 400 (the cursor had to be a
  // stream name), so a client paging all three lists with `?cursor=${next ?? ""}` failed on
  // trending only. Fixed: StreamsQuery takes an empty cursor as the first page.
  it("trending reads an empty cursor as the first page too", async () => {
    const api = newApi("r20-cursor-trending");
    await api.post("/v1/trending/searches/events", { member: "a" });
    const page = await api.get("/v1/trending?limit=1000&cursor=");
    expect(page.status).toBe(200);
    expect(page.body).toEqual({ streams: ["searches"], nextCursor: null });
  });
});
