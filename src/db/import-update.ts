import type { TransactionSql } from "postgres";
import type { AccountWrites } from "./account-writes.ts";
import type { AuditEvent } from "../audit/events.ts";
import type { BatchJob, ImportedUser } from "./import-verdicts.ts";
import { isUniqueViolation } from "./user-rows.ts";
import { isRefusal } from "../refusal.ts";

/**
 * The fields the record gives written over the user's through the one
 * write path (src/db/account-writes.ts), as the API changes an account, in a
 * savepoint: an e-mail another user has refuses this record alone.
 * Answers the records of what changed; undefined when the user is gone or
 * the e-mail is taken.
 */
export async function updateImported(
  tx: TransactionSql,
  accounts: AccountWrites,
  job: BatchJob,
  id: number,
  u: ImportedUser,
): Promise<AuditEvent[] | undefined> {
  try {
    return await tx.savepoint(async (sp) => {
      const changed = await accounts.change(sp, id, {
        name: u.name,
        email: u.email,
        profile: u.profile,
        externalId: u.externalId,
        role: u.role,
        passwordHash: u.passwordHash,
        disabled: u.disabled,
      }, {
        actor: job.actor,
        context: job.context,
        keepSession: job.session ?? undefined,
      });
      return isRefusal(changed) ? undefined : changed.events;
    });
  } catch (e) {
    if (isUniqueViolation(e)) return undefined;
    throw e;
  }
}
