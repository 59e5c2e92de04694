import { newSessionToken, sha256 } from "../auth/tokens.ts";

/** What every provisioning token starts with: recognisable in configuration and logs. */
export const SCIM_TOKEN_PREFIX = "usc_";

/** A token: `usc_` and 43 base64url characters (256 random bits). */
const SCIM_TOKEN = /^usc_[A-Za-z0-9_-]{43}$/;

/** The header's scheme (case-insensitive, RFC 9110), one space, the token. */
const BEARER = /^bearer (.*)$/i;

/** A new connection's token, as shown once, and what the database keeps of it. */
export function newScimToken() {
  const token = SCIM_TOKEN_PREFIX + newSessionToken();
  return { token, tokenHash: sha256(token) };
}

/** The SHA-256 of the token an `Authorization` value carries, if it is `Bearer` and a token's shape. */
export function scimTokenHash(
  authorization: string | undefined,
): Uint8Array | undefined {
  const token = authorization && BEARER.exec(authorization)?.[1];
  return token && SCIM_TOKEN.test(token) ? sha256(token) : undefined;
}
