import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { LoginCounter } from "../db/throttle.ts";
import { auditContext } from "../audit/context.ts";
import { auditEvents } from "../audit/events.ts";
import type { Handlers } from "../http/endpoint.ts";
import { countedBlock } from "../http/ip.ts";
import { clientIp } from "../http/origin.ts";
import { canonicalKey } from "../users/canonical.ts";
import type * as routes from "./auth.routes.ts";
import type { Devices } from "./devices.ts";
import { type PasswordHasher, upgradeOf } from "./passwords.ts";
import type { Sessions } from "./session.ts";
import { sha256 } from "./tokens.ts";

export interface AuthDeps {
  store: Store;
  passwords: PasswordHasher;
  sessions: Sessions;
  devices: Devices;
  config: Pick<
    Config,
    "LOGIN_MAX_FAILURES" | "LOGIN_WINDOW_SECONDS" | "TRUST_PROXY"
  >;
}

/** Failures over all addresses, as a multiple of the per-address limit: the ceiling against distributed guessing. */
export const LOGIN_CEILING_FACTOR = 10;

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

export function createAuthHandlers(
  { store, passwords, sessions, devices, config }: AuthDeps,
) {
  const login: Handler<"login"> = async (c, { body }) => {
    const { username, password } = body;
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
    const device = await devices.recognise(c, known);
    const counter: LoginCounter = device !== undefined
      ? { usernameHash, device }
      // An IPv4 address or an IPv6 /64 (countedBlock): at most 24 characters.
      : {
        usernameHash,
        address: countedBlock(clientIp(c, config.TRUST_PROXY) ?? "unknown"),
      };
    const context = auditContext(c, config.TRUST_PROXY);
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
      return "throttled";
    }
    // Always one bcrypt verification, so an unknown name takes as long as a wrong password.
    if (!await passwords.verify(password, user?.passwordHash)) {
      await store.audit.record(auditEvents.loginFailed(user, context), writeBy);
      return "invalid_credentials";
    }
    const { passwordHash: _, passwordVersion, ...account } = user!;
    const deviceCookie = await devices.issue(known!, device);
    // An imported hash of another scheme becomes bcrypt in the login's write.
    const upgrade = await upgradeOf(passwords, password, user!.passwordHash);
    // No session when the password was reset while it was being checked,
    // nor for a disabled user (checked under the user's row lock, so a
    // disable that raced this login ends whatever it made).
    const started = await sessions.start(
      c,
      { ...account, passwordVersion },
      counter,
      upgrade,
    );
    if (started === "stale") return "invalid_credentials";
    if (started === "disabled") return "disabled";
    devices.set(c, deviceCookie);
    return c.json(account, 200);
  };

  const logout: Handler<"logout"> = async (c) => {
    await sessions.end(c);
    return c.json({ ok: true as const }, 200);
  };

  const me: Handler<"me"> = (c, { caller }) => c.json(caller.account, 200);

  return { login, logout, me };
}
