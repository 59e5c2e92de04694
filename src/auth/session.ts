import type { PasswordUpgrade } from "./passwords.ts";
import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import { auditContext, type WriteEnv } from "../http/audit-context.ts";
import type { Config } from "../config.ts";
import type {
  LoginFactor,
  ProviderLogin,
  SessionStart,
} from "../db/sessions.ts";
import type { Reason, Refusal } from "../refusal.ts";
import type { Store } from "../db/store.ts";
import type { LoginCounter } from "../db/throttle.ts";
import { isHttps, requestOrigin } from "../http/origin.ts";
import type { Caller } from "./caller.ts";
import { keyCaller } from "./api-keys.ts";
import { accessOf } from "./permissions.ts";
import { isSessionToken, newSessionToken, sha256 } from "./tokens.ts";

export const SESSION_COOKIE = "sid";

type SessionConfig = Pick<
  Config,
  | "SESSION_TTL_SECONDS"
  | "COOKIE_SECURE"
  | "TRUST_PROXY"
  | "ALLOWED_ORIGINS"
  | "MFA_REQUIRED_FOR_ADMINS"
  | "MFA_STEP_UP_SECONDS"
>;

const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** A session keeps at most this many characters of its login's User-Agent. */
export const USER_AGENT_MAX = 256;

/** The first `max` code points (never half a surrogate pair). */
const cutCodePoints = (text: string, max: number) =>
  text.length <= max ? text : Array.from(text).slice(0, max).join("");

/** Sessions as the HTTP layer sees them: the cookie and the origin rule. The guards (guards.ts) use it. */
export interface Sessions {
  /**
   * The caller the request names: by its `Authorization` header when it
   * has one (an API key, keys.ts), else by its cookie, if its session is
   * unexpired.
   */
  caller(c: Context): Promise<Caller | undefined>;
  /**
   * Whether a page of another origin sent this state-changing request
   * (refused on top of SameSite=Strict); requests without Origin, or with
   * an `Authorization` header, from other services, are not.
   */
  isForeign(c: Context): boolean;
  /**
   * Whether MFA_REQUIRED_FOR_ADMINS holds this caller to enrolment: an
   * admin's session that has not passed a second factor (a key is a
   * service's, never held).
   */
  enrollmentRequired(caller: Caller): boolean;
  /**
   * Whether the caller must pass a second factor before a dangerous action:
   * a session of a user with a factor, whose session has not passed one
   * within MFA_STEP_UP_SECONDS. A key is its own possession factor.
   */
  stepUpRequired(caller: Caller): boolean;
  /**
   * A new session for the user, bound to the password version the login
   * checked: a fresh token every time, never one the client sent, and the
   * login's failure counter cleared in the same write (store.sessions.create).
   * No session and no cookie when the password has changed since (`stale`)
   * or the user is disabled.
   */
  start<E extends WriteEnv, O extends Reason = never>(
    c: Context<E>,
    user: { id: number; username: string; passwordVersion: number },
    counter: LoginCounter,
    factor?: LoginFactor<O>,
    /** An imported hash replaced by bcrypt in the same write. */
    upgrade?: PasswordUpgrade,
    /** A login through an identity provider rather than a password. */
    viaProvider?: ProviderLogin,
  ): Promise<SessionStart | Refusal<O>>;
  /**
   * Ends the request's session, if any, and clears the cookie; with an
   * `Authorization` header, nothing.
   */
  end<E extends WriteEnv>(c: Context<E>): Promise<void>;
  /** Clears the session cookie, as `end` does: for a session ended otherwise (the person ended their current one). */
  forget(c: Context): void;
}

/**
 * The value of the first `sid` pair of a Cookie header, without the quotes
 * a client may put around it. Read here rather than by hono's getCookie,
 * which parses and URI-decodes every pair up to it on every request: a
 * session token is base64url, which no decoding changes.
 */
const SESSION_PAIR = new RegExp(
  `(?:^|;)[ \\t]*${SESSION_COOKIE}[ \\t]*=[ \\t]*("?)([^;" \\t]*)\\1[ \\t]*(?:;|$)`,
);
const sessionToken = (cookie: string | undefined) =>
  cookie === undefined ? undefined : SESSION_PAIR.exec(cookie)?.[2];

/** Whether the service's cookies (`sid`, `did`) get `Secure`: over HTTPS, or always with COOKIE_SECURE. */
export const secureCookie = (
  c: Context,
  config: Pick<Config, "COOKIE_SECURE" | "TRUST_PROXY">,
) => config.COOKIE_SECURE || isHttps(c, config.TRUST_PROXY);

export function createSessions(store: Store, config: SessionConfig): Sessions {
  const cookieOptions = (c: Context) => ({
    httpOnly: true,
    sameSite: "Strict" as const,
    path: "/",
    secure: secureCookie(c, config),
  });

  /** The token hash of the request's cookie, if it carries a well-formed one. */
  const presentedHash = (c: Context) => {
    const token = sessionToken(c.req.header("cookie"));
    return token && isSessionToken(token) ? sha256(token) : undefined;
  };

  const forget = (c: Context) =>
    deleteCookie(c, SESSION_COOKIE, cookieOptions(c));

  return {
    async caller(c) {
      // An Authorization header decides alone: no fallback to the cookie.
      const authorization = c.req.header("authorization");
      if (authorization !== undefined) {
        return await keyCaller(store, authorization);
      }
      const session = presentedHash(c);
      const found = session && await store.sessions.resolve(session);
      return session && found
        ? {
          account: found.account,
          access: accessOf(found.account.role, found.granted),
          session,
          secondFactor: {
            enrolled: found.mfaEnabled,
            age: found.secondFactorAge,
          },
        }
        : undefined;
    },

    enrollmentRequired: (caller) =>
      config.MFA_REQUIRED_FOR_ADMINS && caller.session !== undefined &&
      caller.account.role === "admin" &&
      (caller.secondFactor?.age ?? null) === null,

    stepUpRequired: ({ secondFactor }) =>
      secondFactor !== undefined && secondFactor.enrolled &&
      (secondFactor.age === null ||
        secondFactor.age > config.MFA_STEP_UP_SECONDS),

    isForeign(c) {
      // A page of another origin cannot send Authorization without a CORS
      // preflight, which the service never grants: key requests skip it.
      if (c.req.header("authorization") !== undefined) return false;
      const origin = c.req.header("origin");
      return origin !== undefined && UNSAFE_METHODS.has(c.req.method) &&
        origin !== requestOrigin(c, config.TRUST_PROXY) &&
        !config.ALLOWED_ORIGINS.includes(origin);
    },

    async start(c, user, counter, factor, upgrade, viaProvider) {
      const token = newSessionToken();
      const context = auditContext(c, config.TRUST_PROXY, "api");
      const userAgent = c.req.header("user-agent");
      const outcome = await store.sessions.create(
        sha256(token),
        user,
        config.SESSION_TTL_SECONDS,
        counter,
        {
          clientAddress: context.clientAddress,
          userAgent: userAgent === undefined
            ? null
            : cutCodePoints(userAgent, USER_AGENT_MAX),
        },
        context,
        c.get("writeBy"),
        factor,
        upgrade,
        viaProvider,
      );
      if (outcome !== "started") return outcome;
      setCookie(c, SESSION_COOKIE, token, {
        ...cookieOptions(c),
        maxAge: config.SESSION_TTL_SECONDS,
      });
      return outcome;
    },

    async end(c) {
      // With an API key the header decides alone, and a key is no session:
      // nothing ends (a key ends when it is revoked).
      if (c.req.header("authorization") !== undefined) return;
      const hash = presentedHash(c);
      if (hash) {
        await store.sessions.revoke(
          hash,
          auditContext(c, config.TRUST_PROXY, "api"),
          c.get("writeBy"),
        );
      }
      forget(c);
    },

    forget,
  };
}
