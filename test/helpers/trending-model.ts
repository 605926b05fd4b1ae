/**
 * The plain model of trending the differential tests (test/redis/review10-trending-model.test.ts,
 * test/redis/review17-trending.test.ts) compare every answer with: exact counts per stream, hour and
 * member, what a never-trimmed store would hold. One class so the two reviews check one definition.
 */

/** UTF-8 byte order: docs/trending.md ranks equal counts by it. */
export const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));

/** Everything acknowledged: stream → hour → member → count. */
export class Model {
  data = new Map<string, Map<number, Map<string, number>>>();
  hourOf(stream: string, h: number): Map<string, number> {
    let s = this.data.get(stream);
    if (!s) this.data.set(stream, (s = new Map()));
    let m = s.get(h);
    if (!m) s.set(h, (m = new Map()));
    return m;
  }
  add(stream: string, member: string, count: number, h: number) {
    const m = this.hourOf(stream, h);
    m.set(member, (m.get(member) ?? 0) + count);
  }
  /** A deleted stream holds nothing. */
  drop(stream: string) {
    this.data.delete(stream);
  }
  at(stream: string, member: string, h: number): number {
    return this.data.get(stream)?.get(h)?.get(member) ?? 0;
  }
  /** Summed true counts of one hour: no cut of that hour can exceed what was written into it minus what is kept. */
  mass(stream: string, h: number): number {
    let sum = 0;
    for (const c of this.data.get(stream)?.get(h)?.values() ?? []) sum += c;
    return sum;
  }
  /** Members ever written into the hour: a bucket with at most `keep` of them was never trimmed. */
  distinct(stream: string, h: number): number {
    return this.data.get(stream)?.get(h)?.size ?? 0;
  }
  window(stream: string, H: number, w: number): Map<string, number> {
    const out = new Map<string, number>();
    for (let h = H - w; h <= H; h++)
      for (const [m, c] of this.data.get(stream)?.get(h) ?? []) out.set(m, (out.get(m) ?? 0) + c);
    return out;
  }
  ranked(stream: string, H: number, w: number) {
    return [...this.window(stream, H, w)]
      .sort((x, y) => y[1] - x[1] || bytes(x[0], y[0]))
      .map(([member, count], i) => ({ rank: i + 1, member, count }));
  }
  latestHour(stream: string): number {
    return Math.max(-Infinity, ...(this.data.get(stream)?.keys() ?? []));
  }
}
