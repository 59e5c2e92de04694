import type { Sql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { auditEvents, NO_REQUEST } from "../audit/events.ts";
import {
  disableCleared,
  disabledNow,
  disableExpired,
} from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import { recordMintedRevoked, revokeMinted } from "./api-keys.ts";
import {
  type DetailRow,
  type DisableRequest,
  type FoundUser,
  userRows,
} from "./user-rows.ts";
import type { CallerRefusal, CallerWrite, WriteBy, Writer } from "./write.ts";

/** Disabling and enabling users, and recording the disables that ran out. */
export function createUserLifecycle(
  sql: Sql,
  { transaction, asCaller }: Writer,
) {
  const { detail, detailMeta, found } = userRows(sql);
  const cleared = disableCleared(sql);

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
    ): Promise<FoundUser | "not_found" | CallerRefusal> {
      return await asCaller(write, { update: id }, async (tx, actor) => {
        const [row] = await tx<(DetailRow & { ranOut: boolean })[]>`
          update users set
            disabled_at = case when ${disabledNow(sql)} then users.disabled_at
              else now() end,
            disabled_reason = ${request.reason}::text,
            disabled_until = ${request.until}::timestamptz
          from (select ${disableExpired(sql, "o")} as ran_out
            from users o where o.id = ${id}) old
          where users.id = ${id}
          returning ${detail}, ${detailMeta}, old.ran_out as "ranOut"`;
        if (!row) return "not_found";
        const { ranOut, ...rest } = row;
        const [minted] = await Promise.all([
          revokeMinted(tx, id),
          tx`delete from sessions where user_id = ${id}`,
        ]);
        if (ranOut) {
          await recordAudit(
            tx,
            auditEvents.userEnabled(null, rest, true, write.context),
          );
        }
        await recordAudit(
          tx,
          auditEvents.userDisabled(actor, rest, request, write.context),
        );
        await recordMintedRevoked(tx, minted, actor, write.context);
        return found(rest);
      });
    },

    /**
     * Lifts a disable (in force or run out); a user not disabled is
     * answered as is, unchanged. Recorded as `user.enabled`.
     */
    async enable(
      id: number,
      write: CallerWrite,
    ): Promise<FoundUser | "not_found" | CallerRefusal> {
      return await asCaller(write, { update: id }, async (tx, actor) => {
        const [row] = await tx<(DetailRow & { ranOut: boolean })[]>`
          update users set ${cleared}
          from (select ${disableExpired(sql, "o")} as ran_out
            from users o where o.id = ${id}) old
          where users.id = ${id} and users.disabled_at is not null
          returning ${detail}, ${detailMeta}, old.ran_out as "ranOut"`;
        if (!row) {
          const [same] = await tx<DetailRow[]>`
            select ${detail}, ${detailMeta} from users where id = ${id}`;
          return same ? found(same) : "not_found";
        }
        const { ranOut, ...rest } = row;
        await recordAudit(
          tx,
          ranOut
            ? auditEvents.userEnabled(null, rest, true, write.context)
            : auditEvents.userEnabled(actor, rest, false, write.context),
        );
        return found(rest);
      });
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
