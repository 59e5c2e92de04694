import { heldList, reachShown } from "./permissions.ts";
import type { z } from "@hono/zod-openapi";
import type { PermissionsSchema } from "./auth.routes.ts";
import type { Context } from "hono";
import type { TransactionSql } from "postgres";
import type { Config } from "../config.ts";
import type { LoginFactor } from "../db/sessions.ts";
import type { Store } from "../db/store.ts";
import type { LoginCounter } from "../db/throttle.ts";
import { auditContext } from "../http/audit-context.ts";
import { auditEvents } from "../audit/events.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { countedBlock } from "../http/ip.ts";
import { apiAnswers } from "../http/security-headers.ts";
import { clientIp } from "../http/origin.ts";
import { canonicalKey } from "../users/canonical.ts";
import { NO_PASSWORD } from "../accounts/fields.ts";
import type * as routes from "./auth.routes.ts";
import type { Account } from "../users/user.ts";
import type { Devices } from "./devices.ts";
import { type Factors, refusal } from "./mfa/factors.ts";
import {
  newPendingToken,
  PENDING_SECONDS,
  setPendingCookie,
} from "./mfa/pending.ts";
import {
  type PasswordHasher,
  type PasswordUpgrade,
  upgradeOf,
} from "./passwords.ts";
import type { Sessions } from "./session.ts";
import { sha256 } from "./tokens.ts";
import { isRefusal, type Reason, type Refusal, refuse } from "../refusal.ts";

export interface AuthDeps {
  store: Store;
  passwords: PasswordHasher;
  sessions: Sessions;
  devices: Devices;
  factors: Factors;
  config: Pick<
    Config,
    | "LOGIN_MAX_FAILURES"
    | "LOGIN_WINDOW_SECONDS"
    | "TRUST_PROXY"
    | "COOKIE_SECURE"
  >;
}

/** Failures over all addresses, as a multiple of the per-address limit: the ceiling against distributed guessing. */
export const LOGIN_CEILING_FACTOR = 10;

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** Who a login is: the account it found, under the canonical name it was found by. */
type LoginParty = { id: number; canonicalName: string };

/**
 * What ends a login whose password (and second factor, if any) held: the
 * known-device cookie and the session, or `stale`/`disabled` when the
 * user's row says no (sessions.start). Shared by the login and its second
 * step (src/mfa/mfa.handlers.ts).
 */
export function createLoginEnd({ sessions, devices, config }: Pick<
  AuthDeps,
  "sessions" | "devices" | "config"
>) {
  return {
    /**
     * How a login of this user from this request is counted: by its known
     * device, or by its client address (an IPv4 address or an IPv6 /64,
     * countedBlock: at most 24 characters).
     */
    async counter(
      c: Context<AppEnv>,
      usernameHash: Uint8Array,
      known: LoginParty | undefined,
    ) {
      const device = await devices.recognise(c, known);
      const counter: LoginCounter = device !== undefined
        ? { usernameHash, device }
        : {
          usernameHash,
          address: countedBlock(clientIp(c, config.TRUST_PROXY) ?? "unknown"),
        };
      return { device, counter };
    },

    async finish<O extends Reason = never>(
      c: Context<AppEnv>,
      user: Account & { passwordVersion: number },
      known: LoginParty,
      { device, counter }: {
        device: string | undefined;
        counter: LoginCounter;
      },
      factor?: LoginFactor<O>,
      upgrade?: PasswordUpgrade,
    ): Promise<Account | Refusal<"invalid_credentials" | "disabled" | O>> {
      const deviceCookie = await devices.issue(known, device);
      // No session when the password was reset while it was being checked,
      // nor for a disabled user (checked under the user's row lock, so a
      // disable that raced this login ends whatever it made).
      const started = await sessions.start(c, user, counter, factor, upgrade);
      if (started === "stale") return refuse("invalid_credentials");
      if (started !== "started") return started;
      devices.set(c, deviceCookie);
      const { passwordVersion: _, ...account } = user;
      return account;
    },
  };
}

/** A finished login's answer: the account, or why there is no session. */
export const answer = <O extends Reason>(
  c: Context<AppEnv>,
  ended: Account | Refusal<O>,
) =>
  // A refusal of a reason not yet known (O) is not narrowed by the guard.
  isRefusal(ended) ? ended as Refusal<O> : c.json(ended as Account, 200);

export function createAuthHandlers(deps: AuthDeps) {
  const { store, passwords, sessions, factors, config } = deps;
  const end = createLoginEnd(deps);
  const answerWhole = apiAnswers({ trustProxy: config.TRUST_PROXY });

  const login: Handler<"login"> = async (c, { body }) => {
    const { username, password, code } = body;
    // Counted per username under the canonical key that finds the user (so
    // `admİn`, `ＡＤＭＩＮ` and `admin` are one), known or not, so 429 tells
    // nothing; per client address (an IPv6 one by its /64), and over all
    // addresses up to the ceiling; or, from a known device of that user, per
    // device alone. Records name the whole address.
    const canonicalName = canonicalKey(username);
    const usernameHash = sha256(canonicalName);
    const writeBy = c.get("writeBy");
    // No account's name holds U+0000 (PostgreSQL text cannot).
    const user = username.includes("\u0000")
      ? undefined
      : await store.users.findForLogin(username);
    const known = user && { id: user.id, canonicalName };
    const counted = await end.counter(c, usernameHash, known);
    const { counter } = counted;
    const context = auditContext(c, config.TRUST_PROXY, "api");
    const attempt = await store.loginThrottle.attempt(
      counter,
      {
        max: config.LOGIN_MAX_FAILURES,
        ceiling: LOGIN_CEILING_FACTOR * config.LOGIN_MAX_FAILURES,
        windowSeconds: config.LOGIN_WINDOW_SECONDS,
      },
      // Who was locked out, when the name is an account's; never the attempted name itself.
      (retryAfter) => auditEvents.loginThrottled(user, retryAfter, context),
      writeBy,
    );
    if (attempt.blocked) {
      c.header("Retry-After", String(attempt.retryAfter));
      return refuse("throttled");
    }
    // Always one bcrypt verification, so an unknown name takes as long as a wrong password.
    if (!await passwords.verify(password, user?.passwordHash)) {
      await store.audit.record(auditEvents.loginFailed(user, context), writeBy);
      return refuse("invalid_credentials");
    }
    const {
      passwordHash: _,
      mfaEnabled,
      disabled,
      providerOnly,
      ...account
    } = user!;
    // Its identity provider's policies hold the account (docs/sso.md): the
    // right password tells the person where to sign in, and counts nowhere.
    if (providerOnly) {
      await store.loginThrottle.refused(
        counter,
        auditEvents.loginRefused(
          account,
          context,
          undefined,
          "identity_provider_only",
        ),
        writeBy,
      );
      return refuse("provider_only");
    }
    // An imported hash of another scheme becomes bcrypt in the write that
    // lets the user in (a two-step login's second step has no password: it
    // is upgraded at a login with the code given at once, or without one).
    const upgrade = await upgradeOf(passwords, password, user!.passwordHash);
    // A disabled user is answered as such, second factor or not (by the
    // session's write, which also takes the attempt back).
    if (!mfaEnabled || disabled) {
      return answer(
        c,
        await end.finish(c, account, known!, counted, undefined, upgrade),
      );
    }
    if (code === undefined) {
      // The right password of a user with a factor: a pending login.
      const pending = newPendingToken();
      const started = await store.mfa.startPending(
        pending.hash,
        account,
        PENDING_SECONDS,
        counter,
        context,
        writeBy,
      );
      if (started === "stale") return refuse("invalid_credentials");
      if (isRefusal(started)) return started;
      setPendingCookie(c, pending.token, config);
      return refuse("second_factor_required");
    }
    // The code is decided in the session's own transaction: a login with
    // a code commits no more often than one without.
    const factor = await factors.prepare(c, account.id, { code }, "login");
    return answer(
      c,
      await end.finish(c, account, known!, counted, {
        methods: () => [factor.method],
        write: async (tx: TransactionSql) =>
          refusal(c, await factors.decide(tx, c, account, factor, "login")),
      }, upgrade),
    );
  };

  const logout: Handler<"logout"> = async (c) => {
    await sessions.end(c);
    return c.json({ ok: true as const }, 200);
  };

  // Every client asks it, on every page: made with all its headers at once
  // (security-headers.ts), not given them one by one afterwards.
  const me: Handler<"me"> = (c, { caller }) =>
    answerWhole<Account, 200>(c, JSON.stringify(caller.account), 200);

  const permissions: Handler<"permissions"> = (c, { caller }) =>
    c.json(
      // Reach's readonly list, as the schema's plain one.
      {
        permissions: heldList(caller.access),
        ...reachShown(caller.access),
      } as z.infer<typeof PermissionsSchema>,
      200,
    );

  /**
   * The current password is checked as a login checks one: counted first
   * under the caller's username from this address (or known device), so
   * guesses through a stolen session meet the login's limit; a success
   * clears the counts with the change (the write path).
   */
  const changePassword: Handler<"changePassword"> = async (
    c,
    { body, caller },
  ) => {
    const { currentPassword, newPassword } = body;
    const { id, username } = caller.account;
    const stored = await store.users.passwordHashOf(id);
    if (stored === undefined) return refuse("caller_gone");
    // Nothing to guess: no password matches this one (fields.ts).
    if (stored === NO_PASSWORD) return refuse("no_password");
    const canonicalName = canonicalKey(username);
    const { counter } = await end.counter(c, sha256(canonicalName), {
      id,
      canonicalName,
    });
    const context = auditContext(c, config.TRUST_PROXY, "api");
    const writeBy = c.get("writeBy");
    const attempt = await store.loginThrottle.attempt(
      counter,
      {
        max: config.LOGIN_MAX_FAILURES,
        ceiling: LOGIN_CEILING_FACTOR * config.LOGIN_MAX_FAILURES,
        windowSeconds: config.LOGIN_WINDOW_SECONDS,
      },
      (retryAfter) =>
        auditEvents.loginThrottled({ id, username }, retryAfter, context),
      writeBy,
    );
    if (attempt.blocked) {
      c.header("Retry-After", String(attempt.retryAfter));
      return refuse("throttled");
    }
    if (!await passwords.verify(currentPassword, stored)) {
      return refuse("wrong_password");
    }
    const changed = await store.users.changeOwnPassword(
      await passwords.hash(newPassword),
      {
        caller,
        needs: [],
        context,
        writeBy,
      },
    );
    if (isRefusal(changed)) return changed;
    return c.json({ ok: true as const }, 200);
  };

  return { login, logout, me, permissions, changePassword };
}
