import type { Sql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { auditEvents, NO_REQUEST } from "../audit/events.ts";
import type { AccountChange } from "./account-writes.ts";
import { disableCleared, disableExpired } from "./account-state.ts";
import { accountChanger } from "./users.ts";
import { recordAudit } from "./audit.ts";
import type { DisableRequest, FoundUser } from "./user-rows.ts";
import type { CallerRefusal, CallerWrite, WriteBy, Writer } from "./write.ts";
import { isRefusal, type Refusal, refuse } from "../refusal.ts";

/** Disabling and enabling users, and recording the disables that ran out. */
export function createUserLifecycle(
  sql: Sql,
  { transaction, asCaller }: Writer,
) {
  const cleared = disableCleared(sql);
  const changeAndRead = accountChanger(sql, asCaller);
  /** A disable or enable, which expects no version: only `not_found` besides the caller's refusals. */
  const changed = async (
    id: number,
    change: AccountChange,
    write: CallerWrite,
  ) => {
    const outcome = await changeAndRead(id, change, write);
    return isRefusal(outcome) && outcome.reason === "precondition_failed"
      ? refuse("not_found")
      : outcome;
  };

  return {
    /**
     * Disables the user (or changes the reason and end of a disable in
     * force, which keeps its `since`), ends all their sessions and revokes
     * the keys they minted for others (revokeMinted), in one transaction
     * that holds the user's row: a login waiting for it then finds the user
     * disabled (sessions.create). Their own keys are suspended, not
     * revoked. A disable that ran out unrecorded is recorded as
     * `user.enabled` first.
     */
    async disable(
      id: number,
      request: DisableRequest,
      write: CallerWrite,
    ): Promise<FoundUser | Refusal<"not_found"> | CallerRefusal> {
      return await changed(id, { disabled: request }, write);
    },

    /**
     * Lifts a disable (in force or run out); a user not disabled is
     * answered as is, unchanged. Recorded as `user.enabled`.
     */
    async enable(
      id: number,
      write: CallerWrite,
    ): Promise<FoundUser | Refusal<"not_found"> | CallerRefusal> {
      return await changed(id, { disabled: null }, write);
    },

    /**
     * Clears the disables whose `until` has passed (the users are active
     * already: disabledNow) and records each as `user.enabled`
     * `{expired: true}`; the housekeeping sweep calls it.
     */
    async recordExpiredDisables(writeBy: WriteBy): Promise<number> {
      return await transaction(writeBy, async (tx) => {
        const rows = await tx<AuditParty[]>`
          update users set ${cleared} where ${disableExpired(sql)}
          returning id, username`;
        for (const row of rows) {
          await recordAudit(
            tx,
            auditEvents.userEnabled(null, row, true, NO_REQUEST),
          );
        }
        return rows.length;
      });
    },
  };
}
