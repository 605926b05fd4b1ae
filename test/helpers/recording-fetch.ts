/**
 * `edgestats/client` on a test api's Worker (test/helpers/worker.ts: the Hono app with the test
 * bindings in workerd, on the local Upstash server), through a `fetch` that records what the client
 * sent and what the Worker answered. The client test files (test/worker/review14-client,
 * review17-client, review18-client, client-wire) each had a copy of this `fetch` and of the client
 * around it.
 */
import { createClient, type ClientOptions } from "../../src/client.ts";
import { TEST_KEYS, type TestApi } from "./worker.ts";

/** One request the client sent, and the status the Worker answered it with. */
export interface Sent {
  method: string;
  url: string;
  path: string;
  headers: Headers;
  /** Its Idempotency-Key, or null. */
  key: string | null;
  /** The Worker's status (before `answer`, if given, replaced the answer). */
  status: number;
  /** performance.now() when the Worker had answered. */
  at: number;
}

/**
 * A client `fetch` that hands each request to `api`'s Worker (`app.request`, no network), records
 * it in `sent`, and returns the Worker's answer, or what `answer` makes of it (a proxy in front of
 * the Worker: an answer lost, a body that stalls), given the records so far.
 */
export function recordingFetch(
  api: TestApi,
  sent: Sent[] = [],
  answer?: (response: Response, sent: Sent[]) => Response | Promise<Response>,
): NonNullable<ClientOptions["fetch"]> {
  return async (request) => {
    const response = await api.app.request(request, undefined, api.env);
    sent.push({
      method: request.method,
      url: request.url,
      path: new URL(request.url).pathname,
      headers: request.headers,
      key: request.headers.get("idempotency-key"),
      status: response.status,
      at: performance.now(),
    });
    return answer ? answer(response, sent) : response;
  };
}

/** The client on `api`'s Worker through `recordingFetch` into `sent`: the admin key and no backoff unless `options` say. */
export function workerClient(api: TestApi, sent: Sent[] = [], options: Partial<ClientOptions> = {}) {
  return createClient({
    baseUrl: "http://edgestats.test",
    key: TEST_KEYS.admin,
    fetch: recordingFetch(api, sent),
    backoffMs: () => 0,
    ...options,
  });
}
