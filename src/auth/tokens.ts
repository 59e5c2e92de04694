/** 256 random bits as 43 base64url characters: the session token the cookie carries. */
export function newSessionToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** A token of the shape newSessionToken makes; anything else is not worth a lookup. */
export const isSessionToken = (s: string) => /^[A-Za-z0-9_-]{43}$/.test(s);

/** What the database keeps instead of the token (and of a login's username). */
export async function sha256(text: string): Promise<Uint8Array> {
  const data = new TextEncoder().encode(text);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
}
