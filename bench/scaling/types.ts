import type { RespClient } from "../../dev/resp.ts";
import type { UpstashServer } from "../../dev/upstash-server.ts";
import type { Side } from "../lib/measure.ts";

/** What every scaling run gets: a direct Redis connection for loading, the counters, the service. */
export interface ScalingInput {
  redis: RespClient;
  upstash: UpstashServer;
  side: Side;
  prefix: string;
  sizes: number[];
  log: (msg: string) => void;
}

/** One measured point of a scaling curve: sequential calls at one data size. */
export interface Point {
  calls: number;
  p50: number;
  p95: number;
  /** Redis round trips per call. */
  requests: number;
  /** Redis commands per call (inside scripts included). */
  commands: number;
  /** Anything worth showing next to the figure (e.g. the answer's `exact`). */
  note?: string;
}

export interface Curve {
  /** What is measured, e.g. "trending top-10 / 24 h, before compaction". */
  name: string;
  /** What N counts, e.g. "distinct members per hour". */
  nLabel: string;
  points: { n: number; point: Point }[];
}

export interface Timing {
  name: string;
  points: { n: number; ms: number; detail?: string }[];
}

export interface ScalingResult {
  curves: Curve[];
  timings: Timing[];
  notes: string[];
}
