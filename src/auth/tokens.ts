import { createHash } from "node:crypto";

/** 256 random bits as 43 base64url characters: the session token the cookie carries. */
export function newSessionToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** A new key for the known-device cookie (devices.ts): 256 random bits. */
export const newDeviceKey = () => crypto.getRandomValues(new Uint8Array(32));

/** A token of the shape newSessionToken makes; anything else is not worth a lookup. */
export const isSessionToken = (s: string) => /^[A-Za-z0-9_-]{43}$/.test(s);

/**
 * What the database keeps instead of the token (and of a login's username).
 * Synchronous on purpose: every authenticated request hashes its cookie,
 * and crypto.subtle.digest is an async op whose round trip costs many
 * times the hash of a short text that node:crypto computes in place.
 */
export function sha256(text: string): Uint8Array {
  const digest = createHash("sha256").update(text).digest();
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
}
