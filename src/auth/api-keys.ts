import type { Store } from "../db/store.ts";
import type { Caller } from "./caller.ts";
import { newSessionToken, sha256 } from "./tokens.ts";
import { accessOf } from "./permissions.ts";

/** What every API key starts with: recognisable in configuration and logs. */
export const API_KEY_PREFIX = "uak_";

/** A key: `uak_` and 43 base64url characters (256 random bits). */
const API_KEY = /^uak_[A-Za-z0-9_-]{43}$/;

/** The header's scheme (case-insensitive, RFC 9110), one space, the key. */
const BEARER = /^bearer (.*)$/i;

/** A new key's secret, as shown once, and what the database keeps of it. */
export function newApiKey() {
  const key = API_KEY_PREFIX + newSessionToken();
  return {
    key,
    /** `uak_` and the secret's first 8 characters: names it in lists. */
    prefix: key.slice(0, API_KEY_PREFIX.length + 8),
    secretHash: sha256(key),
  };
}

/** The key an `Authorization` value carries, if it is `Bearer` and a key's shape. */
export function bearerKey(authorization: string): string | undefined {
  const key = BEARER.exec(authorization)?.[1];
  return key !== undefined && API_KEY.test(key) ? key : undefined;
}

/**
 * The caller an `Authorization` header names: the live key's owner with
 * the owner's current row (one indexed lookup, store.apiKeys.resolve), and
 * what the key may do: the owner's permissions, narrowed to the key's list
 * and to what its minter holds now.
 * Anything else (another scheme, a malformed, unknown, revoked or expired
 * key, a deleted owner) names nobody.
 */
export async function keyCaller(
  store: Store,
  authorization: string,
): Promise<Caller | undefined> {
  const key = bearerKey(authorization);
  if (key === undefined) return undefined;
  const found = await store.apiKeys.resolve(sha256(key));
  return found && {
    account: found.account,
    keyId: found.keyId,
    access: accessOf(found.account.role, found.granted, found),
  };
}
