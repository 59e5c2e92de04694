/**
 * The pending-login cookie `mfa`: set when a right password of a user with
 * a factor awaits its second factor. HttpOnly, SameSite=Strict, sent to
 * /api/auth only, 5 minutes; the database keeps its SHA-256, bound to the
 * user and the password version (src/db/mfa-attempts.ts), and the login
 * that uses it deletes it.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Config } from "../../config.ts";
import type { PendingUser } from "../../db/mfa.ts";
import { errorResponse } from "../../http/errors.ts";
import { MSG } from "../../http/messages.ts";
import { check } from "../../http/openapi.ts";
import { passes } from "../../http/steps.ts";
import { secureCookie } from "../session.ts";
import { isSessionToken, newSessionToken, sha256 } from "../tokens.ts";

export const PENDING_COOKIE = "mfa";
export const PENDING_SECONDS = 300;

type CookieConfig = Pick<Config, "COOKIE_SECURE" | "TRUST_PROXY">;

const options = (c: Context, config: CookieConfig) => ({
  httpOnly: true,
  sameSite: "Strict" as const,
  path: "/api/auth",
  secure: secureCookie(c, config),
});

/** A new pending token: the cookie's value, and the hash the store keeps. */
export function newPendingToken() {
  const token = newSessionToken();
  return { token, hash: sha256(token) };
}

export const setPendingCookie = (
  c: Context,
  token: string,
  config: CookieConfig,
) =>
  setCookie(c, PENDING_COOKIE, token, {
    ...options(c, config),
    maxAge: PENDING_SECONDS,
  });

export const clearPendingCookie = (c: Context, config: CookieConfig) =>
  deleteCookie(c, PENDING_COOKIE, options(c, config));

/** The hash of the request's pending-login token, if it carries a well-formed one. */
export function presentedPending(c: Context): Uint8Array | undefined {
  const token = getCookie(c, PENDING_COOKIE);
  return token !== undefined && isSessionToken(token)
    ? sha256(token)
    : undefined;
}

/**
 * The pending login the request's `mfa` cookie names: 401 without one, or
 * with one used, expired, or outdated by a password change (or a disable).
 */
export const pendingLogin = passes<
  "pending",
  { hash: Uint8Array; user: PendingUser }
>(
  "pending",
  [
    check(
      401,
      MSG.unauthorised,
      "no pending-login cookie `mfa`, or one used already, expired (5 minutes), or outdated by a password change",
    ),
  ],
  async (c, { deps }) => {
    const hash = presentedPending(c);
    const user = hash && await deps.store.mfa.pendingUser(hash);
    return hash && user
      ? { hash, user }
      : errorResponse(c, 401, MSG.unauthorised);
  },
);
