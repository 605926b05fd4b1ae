/**
 * A QStash `Upstash-Signature` as QStash signs a message (tests only): an HS256 JWT over the
 * request's URL and the base64url SHA-256 of its body, valid from a second ago for 5 minutes by
 * the real clock (the Worker checks `nbf`/`exp` against it, not the tests' fake clock). Each claim
 * may be overridden to build the refusals.
 */
import { SignJWT } from "jose";

export interface QstashClaims {
  /** The signed URL (`sub`). */
  url: string;
  /** The request body whose hash is signed. @default "" */
  body?: string;
  /** @default "Upstash" */
  iss?: string;
  /** @default now + 300 */
  exp?: number;
  /** @default now - 1 */
  nbf?: number;
}

/** The base64url SHA-256 of `text`, as QStash puts it in the `body` claim. */
export async function bodyHash(text: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return btoa(String.fromCharCode(...new Uint8Array(hash)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

export async function signQstash(key: string, claims: QstashClaims): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ body: await bodyHash(claims.body ?? "") })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer(claims.iss ?? "Upstash")
    .setSubject(claims.url)
    .setIssuedAt(now)
    .setNotBefore(claims.nbf ?? now - 1)
    .setExpirationTime(claims.exp ?? now + 300)
    .setJti(crypto.randomUUID())
    .sign(new TextEncoder().encode(key));
}
