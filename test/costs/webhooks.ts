import type { CostArea } from "./types.ts";

/**
 * What webhook calls and jobs cost. Measured by test/worker/costs-webhooks.test.ts (routes and
 * jobs through the Worker, `emit` through the library with the same counters).
 */
export const area = {
  title: "Webhooks",
  order: 70,
  rows: {
    putNew: {
      call: "create a webhook (admin)",
      state: "new",
      roundTrips: 1,
      commands: 5,
      note: "HGET (exists?), HLEN (the 20-webhook limit), HSET of its detection marks, blank and naming it (`of`: a job run that read the webhooks before a DELETE or this PUT neither reads nor writes them, docs/webhooks.md; UNLINK of any instead for a webhook of no detected event), HSET of its settings.",
    },
    putReplace: {
      call: "replace a webhook (admin)",
      state: "same filter and N (a new URL, events or secret)",
      roundTrips: 1,
      commands: 3,
    },
    putRefilter: {
      call: "replace a webhook (admin)",
      state: "another filter or N",
      roundTrips: 1,
      commands: 4,
      note: "+HSET blanking its detection marks (naming the new filter and N): they were about another stream, room or N.",
    },
    list: { call: "list webhooks (admin)", state: "any (at most 20)", roundTrips: 1, commands: 2 },
    remove: {
      call: "delete a webhook (admin)",
      state: "existing, 1 delivery queued",
      roundTrips: 1,
      commands: 6,
      note: "HDEL, one DEL of its delivery log and detection marks, ZSCAN of the delivery queue for its queued deliveries and ZREM + HDEL of them, so they no longer hold the queue's room (4 with none queued): one ZSCAN per 2,000 queued of any webhook (at most 10,000), ZREM + HDEL per slice holding some of its own.",
    },
    deliveries: { call: "delivery log (admin)", state: "any", roundTrips: 1, commands: 3 },
    test: {
      call: "test event (admin)",
      state: "receiver refuses (retried later)",
      roundTrips: 2,
      commands: 11,
      note: "Queue and claim (HGET, ZCARD, HSETNX, ZADD), then after the POST settle (HMGET of the delivery and of its webhook, LPUSH + LTRIM of the log, ZADD of the retry). A delivered one removes it instead (ZREM, HDEL): 12.",
    },
    emitNone: {
      call: "`emit` (the hook of other features)",
      state: "no subscriber",
      roundTrips: 1,
      commands: 2,
      note: "One HGETALL of the (at most 20) webhooks; nothing else when no webhook subscribes.",
    },
    emitOne: {
      call: "`emit`",
      state: "1 subscriber",
      roundTrips: 1,
      commands: 8,
      note: "+ZMSCORE, ZADD and ZREMRANGEBYRANK of the recent delivery ids (an event is queued once per webhook, whatever their number), ZCARD (the queue's bound), HSETNX of the delivery and its ZADD.",
    },
    emitRepeat: { call: "`emit`", state: "the same event again", roundTrips: 1, commands: 3 },
    minuteIdle: { call: "`webhooks` job (every minute)", state: "no webhook", roundTrips: 1, commands: 2 },
    minuteNothingDue: {
      call: "`webhooks` job",
      state: "1 webhook, no room subscribed, nothing due",
      roundTrips: 2,
      commands: 4,
      note: "The webhooks, then the due deliveries (ZRANGEBYSCORE).",
    },
    minutePeakSteady: {
      call: "`webhooks` job",
      state: "1 room subscribed, peak unchanged",
      roundTrips: 3,
      commands: 8,
      note: "+1 script: ZCARD, and per subscribed room BITFIELD GET of today's peak and HMGET of the peak last told and whose the marks are.",
    },
    minuteRetry: {
      call: "`webhooks` job",
      state: "1 delivery due, receiver refuses",
      roundTrips: 3,
      commands: 14,
      note: "Claim (ZRANGEBYSCORE, HMGET, HGETALL, HSET of the attempts, ZADD of the lease), the POST, then settle (6 as above). Up to 25 deliveries per run share these scripts.",
    },
    minuteRisingQuiet: {
      call: "`webhooks` job",
      state: "1 stream subscribed to `trending.rising`, nothing above the threshold",
      roundTrips: 3,
      commands: 31,
      note: "+ the stream's rising read, as `GET /v1/trending/{stream}/rising?baseline=24h` costs it ([Trending](#trending)): here no top read left a union of the last 24 hours, so one ZMSCORE per baseline hour (fewer with a warm union). At most 5 streams per run (the rest take turns in the next runs).",
    },
    minuteRisingEvent: {
      call: "`webhooks` job",
      state: "1 member newly rising, receiver refuses",
      roundTrips: 5,
      commands: 49,
      note: "+1 script queueing the stream's rising members (at most 10) as `emit` does (HGETALL, then per member SMISMEMBER + SADD + PEXPIRE of the hour's told set, ZCARD, HSETNX + ZADD), then its delivery in the same run (claim, POST, settle). The same member again this hour: `repeated`, SMISMEMBER only.",
    },
    hourlySteady: {
      call: "`webhooks.trending` job (hourly)",
      state: "1 stream subscribed, top N unchanged",
      roundTrips: 3,
      commands: 10,
      note: "Per subscribed webhook: HMGET of its mark (and whose the marks are), ZREVRANGEBYSCORE of the top N of the last two finished hours, HSET of the mark.",
    },
    hourlyAgain: { call: "`webhooks.trending` job", state: "hour already compared", roundTrips: 3, commands: 7 },
  },
} satisfies CostArea;
