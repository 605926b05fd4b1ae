/**
 * The registry lists paged by activity while activity moves (src/redis/pages.ts): GET /v1/presence
 * (rooms) and GET /v1/leaderboards (boards, by cursor). A pass (first page, then nextCursor until
 * null) lists every entry present throughout at least once; only an entry whose activity rose
 * during the pass may show twice; pages hold at most `limit`. Deterministic: the fake clock and a
 * seeded generator drive the changes between pages.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import { cleanedUpAfterAll, createTestApi, type TestApi } from "../helpers/worker.ts";

const MIN = 60_000;
const lb = "/v1/leaderboards";
const admin = { key: "admin" } as const;
const track = cleanedUpAfterAll<TestApi>();

type Page = { status: number; names: string[]; nextCursor: string | null };

async function roomsPage(a: TestApi, limit: number, cursor: string | null): Promise<Page> {
  const res = await a.get(`/v1/presence?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
  return { status: res.status, names: res.body.rooms, nextCursor: res.body.nextCursor };
}

async function boardsPage(a: TestApi, limit: number, cursor: string | null): Promise<Page> {
  const res = await a.get(`${lb}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
  return { status: res.status, names: res.body.boards, nextCursor: res.body.nextCursor };
}

/** A whole pass; `between(page)` runs after each page but the last. */
async function pass(
  read: (cursor: string | null) => Promise<Page>,
  between: (page: number) => Promise<void> = async () => {},
): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const page = await read(cursor);
    expect(page.status).toBe(200);
    pages.push(page.names);
    cursor = page.nextCursor;
    if (cursor) await between(pages.length);
  } while (cursor && pages.length < 200);
  expect(cursor, "the pass ends").toBeNull();
  return pages;
}

describe("GET /v1/presence: a pass while rooms move", () => {
  const beat = (a: TestApi, room: string) => a.post(`/v1/presence/${room}/heartbeats`, { id: "u" });

  async function fourRooms(label: string) {
    const a = track(createTestApi({ label }));
    for (const room of ["r0", "r1", "r2", "r3"]) {
      await beat(a, room);
      a.advance(MIN);
    }
    // Past the timeout: the next heartbeat of any room makes it active again (it moves up).
    a.advance(10 * MIN);
    return a;
  }

  it("a listed room that moves is listed again after the others; a full page hands over to the next phase", async () => {
    const a = await fourRooms("pg-rooms-full");
    const pages = await pass(
      (c) => roomsPage(a, 2, c),
      async (page) => {
        if (page === 1) expect((await beat(a, "r3")).status).toBe(200);
      },
    );
    expect(pages).toEqual([["r3", "r2"], ["r1", "r0"], ["r3"]]);
  });

  it("a room not yet listed that moves is listed on the page that ends the first phase", async () => {
    const a = await fourRooms("pg-rooms-fill");
    const pages = await pass(
      (c) => roomsPage(a, 3, c),
      async (page) => {
        if (page === 1) await beat(a, "r0");
      },
    );
    expect(pages).toEqual([["r3", "r2", "r1"], ["r0"]]);
  });

  it("rooms that move during the second phase make a third; cursors of earlier versions still page", async () => {
    const a = await fourRooms("pg-rooms-phases");
    const pages = await pass(
      (c) => roomsPage(a, 1, c),
      async (page) => {
        a.advance(MIN);
        // r0 moves before it is listed, r3 and r2 after (r2 during the second phase).
        if (page === 1) await beat(a, "r0");
        if (page === 2) await beat(a, "r3");
        if (page === 3) await beat(a, "r2");
      },
    );
    expect(pages).toEqual([["r3"], ["r2"], ["r1"], ["r3"], ["r0"], ["r2"]]);

    // `<score>:<room>` (before phases) pages on as it did: to the end, with no later phase.
    const first = await roomsPage(a, 2, null);
    expect(first.names).toEqual(["r2", "r3"]);
    const old = (first.nextCursor ?? "").split(":").slice(0, 2).join(":");
    await beat(a, "r1");
    const rest = await roomsPage(a, 2, old);
    expect([rest.status, rest.names, rest.nextCursor]).toEqual([200, ["r0"], null]);
  });

  it("a cursor no page can give is a 400 naming the cursor", async () => {
    const a = await fourRooms("pg-rooms-bad");
    for (const bad of ["5:", "5:r1:4:", "5:r1:9:9", "5:r1:9:12", "5::", "x:r1", `5:${"r".repeat(65)}:9:`]) {
      const res = await a.get(`/v1/presence?cursor=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error.details?.[0]?.path ?? res.body.error.message, bad).toMatch(/cursor/);
    }
    expect((await a.get(`/v1/presence?cursor=${"1".repeat(116)}`)).status).toBe(400);
  });

  it("seeded churn: every room present throughout is listed, only rooms that moved show twice", async () => {
    for (const seed of [1, 2, 3]) {
      const a = track(createTestApi({ label: `pg-rooms-churn${seed}` }));
      const random = mulberry32(seed);
      const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)]!;
      const rooms = Array.from({ length: 24 }, (_, i) => `c${i}`);
      for (const room of rooms) {
        await beat(a, room);
        a.advance(1_000);
      }
      const deleted = new Set<string>();
      const moved = new Set<string>();
      let made = 0;
      const pages = await pass(
        (c) => roomsPage(a, 4, c),
        async () => {
          a.advance(6 * MIN);
          for (let k = 0; k < 3; k++) {
            const r = random();
            const live = rooms.filter((room) => !deleted.has(room));
            if (r < 0.6) {
              const room = pick(live);
              moved.add(room);
              await beat(a, room);
            } else if (r < 0.8) {
              const room = pick(live);
              deleted.add(room);
              expect((await a.del(`/v1/presence/${room}`, admin)).status).toBe(204);
            } else {
              await beat(a, `new${made++}`);
            }
            a.advance(1_000);
          }
        },
      );
      expect(pages.every((p) => p.length <= 4)).toBe(true);
      const seen = pages.flat();
      for (const room of rooms) if (!deleted.has(room)) expect(seen, `seed ${seed}: ${room}`).toContain(room);
      const twice = seen.filter((room, i) => seen.indexOf(room) !== i);
      for (const room of twice) expect(moved.has(room), `seed ${seed}: ${room} listed twice`).toBe(true);
    }
  });
});

describe("GET /v1/leaderboards: pages by cursor", () => {
  const join = (a: TestApi, board: string, player: string) =>
    a.put(`${lb}/${board}/players/${player}`, { name: player });

  async function sixBoards(label: string) {
    const a = track(createTestApi({ label }));
    for (let i = 0; i < 6; i++) {
      await join(a, `b${i}`, "p");
      a.advance(1_000);
    }
    return a;
  }

  it("a board not yet listed that gets a new player is listed; boards leaving skip nothing", async () => {
    const a = await sixBoards("pg-boards-move");
    const pages = await pass(
      (c) => boardsPage(a, 2, c),
      async (page) => {
        a.advance(1_000);
        if (page === 1) {
          await join(a, "b0", "q");
          expect((await a.del(`${lb}/b3/players/p`)).status).toBe(204);
        }
        if (page === 2) expect((await a.del(`${lb}/b1/players/p`)).status).toBe(204);
      },
    );
    expect(pages.flat()).toEqual(["b5", "b4", "b2", "b1", "b0"]);
  });

  it("first page answers next and nextCursor; a cursor page next null; an offset page nextCursor null", async () => {
    const a = await sixBoards("pg-boards-shape");
    const first = await a.get(`${lb}?limit=2`);
    expect(first.body).toMatchObject({ boards: ["b5", "b4"], total: 6, next: 2 });
    expect(typeof first.body.nextCursor).toBe("string");
    const second = await a.get(`${lb}?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body).toMatchObject({ boards: ["b3", "b2"], total: 6, next: null });
    expect(typeof second.body.nextCursor).toBe("string");
    // offset=0 is the default, so it goes with a cursor; an offset above 0 does not.
    const zero = await a.get(`${lb}?limit=2&offset=0&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(zero.body.boards).toEqual(["b3", "b2"]);
    const both = await a.get(`${lb}?limit=2&offset=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(both.status).toBe(400);
    expect(both.body.error.details[0].path).toBe("offset");
    const byOffset = await a.get(`${lb}?limit=2&offset=2`);
    expect(byOffset.body).toEqual({ boards: ["b3", "b2"], total: 6, next: 4, nextCursor: null });
    expect((await a.get(`${lb}?limit=2&offset=4`)).body).toEqual({
      boards: ["b1", "b0"],
      total: 6,
      next: null,
      nextCursor: null,
    });
    expect((await a.get(`${lb}?cursor=bad`)).status).toBe(400);
    // CSV: the next page rides in Link, by cursor.
    const csv = await a.get(`${lb}?limit=2`, { headers: { accept: "text/csv" } });
    expect(csv.headers.get("link")).toBe(
      `</v1/leaderboards?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}>; rel="next"`,
    );
  });

  it("seeded churn: every board present throughout is listed, only boards that moved show twice", async () => {
    for (const seed of [4, 5]) {
      const a = track(createTestApi({ label: `pg-boards-churn${seed}` }));
      const random = mulberry32(seed);
      const boards = Array.from({ length: 20 }, (_, i) => `d${i}`);
      const players = new Map<string, number>();
      for (const board of boards) {
        await join(a, board, "p0");
        players.set(board, 1);
        a.advance(1_000);
      }
      const left = new Set<string>();
      const moved = new Set<string>();
      let made = 0;
      const pages = await pass(
        (c) => boardsPage(a, 3, c),
        async () => {
          for (let k = 0; k < 3; k++) {
            a.advance(1_000);
            const r = random();
            const live = boards.filter((b) => !left.has(b));
            const board = live[Math.floor(random() * live.length)]!;
            if (r < 0.6) {
              const n = players.get(board)!;
              await join(a, board, `p${n}`);
              players.set(board, n + 1);
              moved.add(board);
            } else if (r < 0.8 && players.get(board) === 1) {
              left.add(board);
              expect((await a.del(`${lb}/${board}/players/p0`)).status).toBe(204);
            } else {
              await join(a, `new${made++}`, "p0");
            }
          }
        },
      );
      expect(pages.every((p) => p.length <= 3)).toBe(true);
      const seen = pages.flat();
      for (const board of boards) if (!left.has(board)) expect(seen, `seed ${seed}: ${board}`).toContain(board);
      const twice = seen.filter((b, i) => seen.indexOf(b) !== i);
      for (const board of twice) expect(moved.has(board), `seed ${seed}: ${board} listed twice`).toBe(true);
    }
  });
});
