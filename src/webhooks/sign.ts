/**
 * The `Edgestats-Signature` header of direct deliveries: `t=<unix seconds>,v1=<hex HMAC-SHA256>`
 * of `"<t>.<body>"` under the webhook's secret (the Stripe scheme: the timestamp is signed too, so
 * a receiver can refuse old replays). WebCrypto only, so it runs in Workers and Node alike.
 */
const encoder = new TextEncoder();

export const SIGNATURE_HEADER = "Edgestats-Signature";

async function hmacHex(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(text)));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The header value for `body` sent at `nowMs`. */
export async function signature(secret: string, body: string, nowMs: number): Promise<string> {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${await hmacHex(secret, `${t}.${body}`)}`;
}

/**
 * What a receiver does: true when `header` signs `body` under `secret` and its timestamp is within
 * `toleranceSeconds` of `nowMs`. Exported for receivers written in TypeScript (and the tests).
 */
export async function verifySignature(
  secret: string,
  body: string,
  header: string,
  nowMs: number,
  toleranceSeconds = 300,
): Promise<boolean> {
  const parts = new Map(
    header.split(",").map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)] as const),
  );
  const t = Number(parts.get("t"));
  const v1 = parts.get("v1") ?? "";
  if (!Number.isInteger(t) || Math.abs(nowMs / 1000 - t) > toleranceSeconds) return false;
  const expected = await hmacHex(secret, `${t}.${body}`);
  if (expected.length !== v1.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= expected.charCodeAt(i) ^ v1.charCodeAt(i);
  return diff === 0;
}
