import type { Sql } from "postgres";
import { createMfaAttempts } from "./mfa-attempts.ts";
import { createMfaFactors } from "./mfa-factors.ts";
import { createMfaReset } from "./mfa-reset.ts";
import type { Writer } from "./write.ts";

export {
  type ChallengePurpose,
  type FactorAttempt,
  type PendingStart,
  type PendingUser,
} from "./mfa-attempts.ts";
export {
  mfaSummaryOf,
  type NewPasskey,
  type StoredPasskey,
} from "./mfa-factors.ts";

/**
 * Second factors: the ones a user keeps, TOTP secrets, passkeys and
 * recovery codes as hashes (mfa-factors.ts); their reset (mfa-reset.ts);
 * and WebAuthn challenges, pending logins and the wrong-code counters
 * (mfa-attempts.ts).
 */
export function createMfaStore(sql: Sql, writer: Writer) {
  return {
    ...createMfaFactors(sql, writer),
    ...createMfaReset(writer),
    ...createMfaAttempts(sql, writer),
  };
}

export type MfaStore = ReturnType<typeof createMfaStore>;
