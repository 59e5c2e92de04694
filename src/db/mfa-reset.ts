/**
 * Taking every second factor of a user away: an admin's reset, or the
 * recovery task's. Apart from the user's own factors (mfa-factors.ts):
 * it writes on someone else's behalf, and clears the login state too.
 */
import type { TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { type AuditContext, auditEvents } from "../audit/events.ts";
import { recordAudit } from "./audit.ts";
import {
  type CallerRefusal,
  type CallerWrite,
  NO_DEADLINE,
  type Writer,
} from "./write.ts";
import { type Refusal, refuse } from "../refusal.ts";

/** The resets of all of a user's factors. */
export function createMfaReset({ transaction, asCaller }: Writer) {
  return {
    /**
     * Removes every factor and code of the user, their pending logins and
     * wrong-code count, and ends their sessions (an admin's reset, on the
     * admin's behalf: `write`). `not_found` for no such user.
     */
    async reset(
      userId: number,
      write: CallerWrite,
    ): Promise<"reset" | Refusal<"not_found"> | CallerRefusal> {
      return await asCaller(write, { update: userId }, async (tx, actor) => {
        const [target] = await tx<AuditParty[]>`
          select id, username from users where id = ${userId}`;
        if (!target) return refuse("not_found");
        await resetFactors(tx, userId);
        await recordAudit(
          tx,
          auditEvents.mfaReset(actor, target, write.context),
        );
        return "reset" as const;
      });
    },

    /** The recovery task's reset (no actor, no request); false for no such user. */
    async resetByTask(userId: number, context: AuditContext) {
      return await transaction(NO_DEADLINE, async (tx) => {
        const [target] = await tx<AuditParty[]>`
          select id, username from users where id = ${userId} for update`;
        if (!target) return false;
        await resetFactors(tx, target.id);
        await recordAudit(tx, auditEvents.mfaReset(null, target, context));
        return true;
      });
    },
  };
}

/** Every factor, code, pending login and session of the user go; the user's row notes no factor. */
async function resetFactors(tx: TransactionSql, userId: number) {
  await tx`delete from mfa_totp where user_id = ${userId}`;
  await tx`delete from mfa_passkeys where user_id = ${userId}`;
  await tx`delete from mfa_recovery_codes where user_id = ${userId}`;
  await tx`delete from mfa_challenges where user_id = ${userId}`;
  await tx`delete from mfa_pending where user_id = ${userId}`;
  await tx`delete from mfa_failures where user_id = ${userId}`;
  await tx`delete from sessions where user_id = ${userId}`;
  await tx`update users set mfa_enabled = false where id = ${userId}`;
}
