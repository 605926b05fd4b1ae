/**
 * The cost table: what each call costs in Upstash commands, per state. One
 * file per area (`test/costs/<area>.ts`) lists its rows; the area's cost test
 * (`test/worker/costs-<area>.test.ts`) measures every row with the local
 * Upstash server's counters and asserts the figures exactly, and
 * `npm run costs` writes docs/costs.md from the same rows (a unit test fails
 * when the page is stale). So a figure in the docs is a figure a test checked.
 */
export interface CostRow {
  /** What is called, as a user would name it ("counter incr, `period=day`"). */
  call: string;
  /** The state that matters ("new member", "steady", "first read of the hour"). */
  state: string;
  /** Redis HTTP round trips (1 for every API call; 0 on an edge-cache hit). */
  roundTrips: number;
  /** Upstash-billed commands: EVALSHA plus every command the script runs. */
  commands: number;
  /** What the naive code from the source posts costs for the same thing, where it has one. */
  naive?: number;
  /** The ceiling issue 14 set (or issue 15's 60 commands for 400-day reads and deletes), where one was set. */
  target?: number;
  /**
   * Why the row may exceed its target: a documented exception (docs/costs.md prints it). Every
   * other row with a target is held to it (test/unit/costs-doc.test.ts), note or not.
   */
  exception?: string;
  /** The figures are what the row adds to another call (no calls/s of its own). */
  extra?: boolean;
  /** Why, where the figure needs a word (a guarantee that costs a command, a bound). */
  note?: string;
}

export interface CostArea {
  /** Section title in docs/costs.md. */
  title: string;
  /** Order in docs/costs.md. */
  order: number;
  rows: Record<string, CostRow>;
}

/** Asserts a measured cost against its row; the message names the row, so a drift is easy to place. */
export function costOf(measured: { requests: number; commands: number }): { roundTrips: number; commands: number } {
  return { roundTrips: measured.requests, commands: measured.commands };
}

export function expected(row: CostRow): { roundTrips: number; commands: number } {
  return { roundTrips: row.roundTrips, commands: row.commands };
}

/**
 * Pages a registry list by cursor from its first page (`<base>?limit=<limit>`) to the end of the
 * pass, checking each later page's cost (measured by a second GET of the same URL): every page but
 * the pass's last as `next`, the last as `last`. Returns the rows checked, in order.
 */
export async function checkCursorPass<Id extends string>(
  get: (url: string) => Promise<{ status: number; body: { nextCursor: string | null } }>,
  check: (id: Id, call: () => Promise<{ status: number }>) => Promise<unknown>,
  list: { base: string; limit: number; next: Id; last: Id },
): Promise<Id[]> {
  const url = (cursor: string) => `${list.base}?limit=${list.limit}&cursor=${encodeURIComponent(cursor)}`;
  let cursor = (await get(`${list.base}?limit=${list.limit}`)).body.nextCursor;
  const checked: Id[] = [];
  while (cursor !== null) {
    const page = url(cursor);
    cursor = (await get(page)).body.nextCursor;
    const id = cursor === null ? list.last : list.next;
    await check(id, () => get(page));
    checked.push(id);
  }
  return checked;
}
