import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { auditContext } from "../audit/context.ts";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { AppEnv } from "../http/env.ts";
import { ApiError } from "../http/errors.ts";
import { MSG } from "../http/messages.ts";
import { isHttps, requestOrigin } from "../http/origin.ts";
import { isSessionToken, newSessionToken, sha256 } from "./tokens.ts";

export const SESSION_COOKIE = "sid";

type SessionConfig = Pick<
  Config,
  "SESSION_TTL_SECONDS" | "COOKIE_SECURE" | "TRUST_PROXY" | "ALLOWED_ORIGINS"
>;

const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** Sessions as the HTTP layer sees them: the cookie, the guards, the origin rule. */
export function createSessions(store: Store, config: SessionConfig) {
  const cookieOptions = (c: Context) => ({
    httpOnly: true,
    sameSite: "Strict" as const,
    path: "/",
    secure: config.COOKIE_SECURE || isHttps(c, config.TRUST_PROXY),
  });

  /** The token hash of the request's cookie, if it carries a well-formed one. */
  const presentedHash = async (c: Context) => {
    const token = getCookie(c, SESSION_COOKIE);
    return token && isSessionToken(token) ? await sha256(token) : undefined;
  };

  /** 401 unless the cookie names an unexpired session; sets `caller` fresh from the database. */
  const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
    const hash = await presentedHash(c);
    const caller = hash && await store.sessions.resolve(hash);
    if (!hash || !caller) throw new ApiError(401, MSG.unauthorised);
    c.set("caller", caller);
    c.set("sessionHash", hash);
    await next();
  };

  /**
   * 403 for a state-changing request that a page of another origin sent
   * (on top of SameSite=Strict); requests without Origin, from other
   * services, pass.
   */
  const sameOrigin: MiddlewareHandler<AppEnv> = async (c, next) => {
    const origin = c.req.header("origin");
    if (
      origin !== undefined && UNSAFE_METHODS.has(c.req.method) &&
      origin !== requestOrigin(c, config.TRUST_PROXY) &&
      !config.ALLOWED_ORIGINS.includes(origin)
    ) {
      throw new ApiError(403, MSG.forbidden);
    }
    await next();
  };

  /** 401, then 403 for a caller who is not an admin. */
  const requireAdmin: MiddlewareHandler<AppEnv> = (c, next) =>
    authenticate(c, async () => {
      if (c.get("caller").role !== "admin") {
        throw new ApiError(403, MSG.forbidden);
      }
      await sameOrigin(c, next);
    });

  return {
    authenticate,
    requireAdmin,
    sameOrigin,

    /**
     * A new session for the user, bound to the password version the login
     * checked: a fresh token every time, never one the client sent. False
     * (and no cookie) when the password has changed since.
     */
    async start(
      c: Context<AppEnv>,
      user: { id: number; username: string; passwordVersion: number },
    ): Promise<boolean> {
      const token = newSessionToken();
      const started = await store.sessions.create(
        await sha256(token),
        user,
        config.SESSION_TTL_SECONDS,
        auditContext(c, config.TRUST_PROXY),
      );
      if (!started) return false;
      setCookie(c, SESSION_COOKIE, token, {
        ...cookieOptions(c),
        maxAge: config.SESSION_TTL_SECONDS,
      });
      return true;
    },

    /** Ends the request's session, if any, and clears the cookie. */
    async end(c: Context<AppEnv>) {
      const hash = await presentedHash(c);
      if (hash) {
        await store.sessions.revoke(hash, auditContext(c, config.TRUST_PROXY));
      }
      deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;
