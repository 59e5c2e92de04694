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
import {
  auditContext,
  type AuditEnv,
  type WriteEnv,
} from "../../http/audit-context.ts";
import { auditEvents } from "../../audit/events.ts";
import type { Config } from "../../config.ts";
import type { ChallengePurpose } from "../../db/mfa.ts";
import type { Store } from "../../db/store.ts";
import type { Passkeys } from "./passkeys.ts";
import { recoveryCodeHash } from "./recovery.ts";
import { isTotpCode, totpStep } from "./totp.ts";
import { type Refusal, refuse } from "../../refusal.ts";

/** Wrong second factors of one user per login window before every attempt answers 429. */
export const SECOND_FACTOR_MAX_FAILURES = 5;

/** What a request offers as its second factor. */
export type FactorInput = { code: string } | { passkey: unknown };

export type FactorMethod = "totp" | "recovery_code" | "passkey";

export type FactorVerdict =
  | { ok: true; method: FactorMethod }
  | { ok: false; retryAfter?: number };

/**
 * A factor made ready outside the deciding transaction (what reads or must
 * be computed first: the TOTP's step, a passkey's signature, whose
 * challenge is taken back then); `consume` uses it up inside.
 */
export interface PreparedFactor {
  method: FactorMethod;
  consume(tx: TransactionSql): Promise<boolean>;
}

/** A refused factor as a route's refusal (Retry-After set for a full window). */
export function refusal(
  c: Context,
  verdict: FactorVerdict,
): Refusal<"invalid_code" | "throttled"> | undefined {
  if (verdict.ok) return undefined;
  if (verdict.retryAfter === undefined) return refuse("invalid_code");
  c.header("Retry-After", String(verdict.retryAfter));
  return refuse("throttled");
}

export function createFactors(
  store: Store,
  passkeys: Passkeys,
  config: Pick<Config, "LOGIN_WINDOW_SECONDS" | "TRUST_PROXY">,
) {
  const max = SECOND_FACTOR_MAX_FAILURES;

  return {
    /** Reads and computes what checking `input` needs, before the transaction that decides it. */
    async prepare<E extends WriteEnv>(
      c: Context<E>,
      userId: number,
      input: FactorInput,
      purpose: Exclude<ChallengePurpose, "register">,
    ): Promise<PreparedFactor> {
      if ("passkey" in input) {
        const writeBy = c.get("writeBy");
        const found = await passkeys.verifyAuthentication(
          input.passkey,
          await store.mfa.passkeys(userId),
          purpose,
          (p, challenge) =>
            store.mfa.takeChallenge(userId, p, challenge, writeBy),
        );
        return {
          method: "passkey",
          consume: async (tx) => {
            if (!found) return false;
            await store.mfa.passkeyUsed(tx, found.passkey.id, found.counter);
            return true;
          },
        };
      }
      if (isTotpCode(input.code)) {
        const secret = await store.mfa.totpSecret(userId, true);
        const step = secret === undefined ? null : totpStep(secret, input.code);
        return {
          method: "totp",
          consume: async (tx) =>
            step !== null && await store.mfa.useTotpStep(tx, userId, step),
        };
      }
      const hash = recoveryCodeHash(input.code);
      return {
        method: "recovery_code",
        consume: async (tx) =>
          hash !== null && await store.mfa.useRecoveryCode(tx, userId, hash),
      };
    },

    /**
     * `throttled` (Retry-After set) when the user's window is full, read
     * before any transaction: the attempt would be refused unchecked, so it
     * waits for no lock. A login with its code skips this: its refusal must
     * also clear the right password's count, in the session's write.
     */
    async windowFull(c: Context, userId: number) {
      const retryAfter = await store.mfa.windowFull(
        userId,
        max,
        config.LOGIN_WINDOW_SECONDS,
      );
      return retryAfter === undefined
        ? undefined
        : refusal(c, { ok: false, retryAfter });
    },

    /**
     * The user's second factor, decided once in `tx`: counted first (a
     * full window answers `retryAfter` and checks nothing), then used up;
     * a wrong one recorded, a right one's count taken back.
     */
    async decide<E extends AuditEnv>(
      tx: TransactionSql,
      c: Context<E>,
      user: AuditParty,
      factor: PreparedFactor,
      purpose: "login" | "step_up",
    ): Promise<FactorVerdict> {
      const attempt = await store.mfa.attempt(
        tx,
        user.id,
        max,
        config.LOGIN_WINDOW_SECONDS,
      );
      if (attempt.blocked) return { ok: false, retryAfter: attempt.retryAfter };
      if (!await factor.consume(tx)) {
        await store.mfa.failed(
          tx,
          auditEvents.secondFactorFailed(
            user,
            purpose,
            auditContext(c, config.TRUST_PROXY, "api"),
          ),
        );
        return { ok: false };
      }
      await store.mfa.succeeded(tx, user.id, max);
      return { ok: true, method: factor.method };
    },
  };
}

export type Factors = ReturnType<typeof createFactors>;
