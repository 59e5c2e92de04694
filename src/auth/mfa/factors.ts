/**
 * Checking a second factor for a user whose password (or session) is
 * known: a TOTP code, a recovery code or a passkey assertion. Every check
 * is counted per user before it runs (5 per login window, wrong or not; a
 * right one is taken back), so neither parallel guesses nor many addresses
 * pass the limit; each wrong one counted is recorded, so the trail holds at
 * most 5 per user and window.
 */
import type { Context } from "hono";
import type { TransactionSql } from "postgres";
import type { AuditParty } from "../../audit/chain.ts";
import { auditContext } from "../../audit/context.ts";
import { auditEvents } from "../../audit/events.ts";
import type { Config } from "../../config.ts";
import type { ChallengePurpose } from "../../db/mfa.ts";
import type { Store } from "../../db/store.ts";
import type { AppEnv } from "../../http/env.ts";
import type { Passkeys } from "./passkeys.ts";
import { recoveryCodeHash } from "./recovery.ts";
import { isTotpCode, totpStep } from "./totp.ts";

/** Wrong second factors of one user per login window before every attempt answers 429. */
export const SECOND_FACTOR_MAX_FAILURES = 5;

/** What a request offers as its second factor. */
export type FactorInput = { code: string } | { passkey: unknown };

export type FactorMethod = "totp" | "recovery_code" | "passkey";

export type FactorVerdict =
  | {
    ok: true;
    method: FactorMethod;
    /** Takes back the attempt's count, in the transaction that lets the user in. */
    settle(tx: TransactionSql): Promise<void>;
  }
  | { ok: false; retryAfter?: number };

export function createFactors(
  store: Store,
  passkeys: Passkeys,
  config: Pick<Config, "LOGIN_WINDOW_SECONDS" | "TRUST_PROXY">,
) {
  const max = SECOND_FACTOR_MAX_FAILURES;

  /** Which factor the input is, if it is one of the user's (a used code or step is none). */
  async function check(
    c: Context<AppEnv>,
    userId: number,
    input: FactorInput,
    purpose: Exclude<ChallengePurpose, "register">,
  ): Promise<FactorMethod | undefined> {
    const writeBy = c.get("writeBy");
    if ("passkey" in input) {
      const found = await passkeys.verifyAuthentication(
        input.passkey,
        await store.mfa.passkeys(userId),
        purpose,
        (p, challenge) =>
          store.mfa.takeChallenge(userId, p, challenge, writeBy),
      );
      if (!found) return undefined;
      await store.mfa.passkeyUsed(found.passkey.id, found.counter, writeBy);
      return "passkey";
    }
    if (isTotpCode(input.code)) {
      const secret = await store.mfa.totpSecret(userId, true);
      const step = secret === undefined ? null : totpStep(secret, input.code);
      return step !== null &&
          await store.mfa.useTotpStep(userId, step, writeBy)
        ? "totp"
        : undefined;
    }
    const hash = recoveryCodeHash(input.code);
    return hash && await store.mfa.useRecoveryCode(userId, hash, writeBy)
      ? "recovery_code"
      : undefined;
  }

  return {
    /**
     * The user's second factor, checked once: `ok` with its method, or not
     * (with `retryAfter` when the user's window is full: no check was made).
     */
    async verify(
      c: Context<AppEnv>,
      user: AuditParty,
      input: FactorInput,
      purpose: "login" | "step_up",
    ): Promise<FactorVerdict> {
      const writeBy = c.get("writeBy");
      const attempt = await store.mfa.attempt(
        user.id,
        max,
        config.LOGIN_WINDOW_SECONDS,
        writeBy,
      );
      if (attempt.blocked) return { ok: false, retryAfter: attempt.retryAfter };
      const method = await check(c, user.id, input, purpose);
      if (!method) {
        await store.audit.record(
          auditEvents.secondFactorFailed(
            user,
            purpose,
            auditContext(c, config.TRUST_PROXY),
          ),
          writeBy,
        );
        return { ok: false };
      }
      return {
        ok: true,
        method,
        settle: (tx) => store.mfa.succeeded(tx, user.id, max),
      };
    },
  };
}

export type Factors = ReturnType<typeof createFactors>;
