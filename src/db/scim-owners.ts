/**
 * Which users a connection may write: the one decision every SCIM write of
 * a user (create aside) and every change of a group's members asks.
 *
 * A connection owns the users it created, and takes over an existing user
 * on its first write to them only when that user is a viewer no other live
 * connection owns and who holds no role (src/db/roles.ts): a connection's
 * token is no way round delegated administration's rules. An admin it did not make admin through its adminGroups,
 * and another connection's user, are read-only to it: a write of them is
 * refused, and so is a change of its groups that would change their role.
 * A deleted connection owns nothing any more.
 */
import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { scimEvents } from "../audit/scim-events.ts";
import type { Role } from "../users/user.ts";
import { recordAudit } from "./audit.ts";
import type { GroupChange, ScimRoles } from "./scim-roles.ts";
import type { ScimWrite } from "./scim-types.ts";
import { type Refusal, refuse } from "../refusal.ts";

/** The users a write may go on with. */
export interface Allowed {
  /** Those whose role the connection's groups set: its own, and those it takes over. */
  governed: number[];
  /** Those it takes over: linked (`take`) when the write goes on. */
  takeOver: AuditParty[];
}

export function createScimOwners(sql: Sql, roles: ScimRoles) {
  return {
    /**
     * Whether the connection may write these users, holding their rows
     * until the write ends. Without `change` (a write of the users
     * themselves) every one must be its own or one it takes over; with it
     * (a change of a group's members or name), the others stay as they are
     * unless the change would change their role.
     */
    async decide(
      tx: TransactionSql,
      write: ScimWrite,
      userIds: number[],
      change?: GroupChange,
    ): Promise<Allowed | Refusal<"managed_elsewhere">> {
      const connectionId = write.connection.id;
      if (userIds.length === 0) return { governed: [], takeOver: [] };
      // Locked first, read after: the standing is read with a snapshot
      // taken once a concurrent takeover of the same users has committed.
      await tx`
        select id from users where id = any(${userIds}::int[])
        order by id for update`;
      const rows = await tx<
        (AuditParty & {
          role: Role;
          standing: "own" | "takeOver" | "elsewhere";
        })[]
      >`
        select u.id, u.username, u.role, case
          when exists (select 1 from scim_user_links l
            where l.user_id = u.id and l.connection_id = ${connectionId}
              and l.owner)
          then case when u.role = 'viewer' or ${
        roles.adminBy(connectionId, sql`u.id`)
      } then 'own' else 'elsewhere' end
          when u.role = 'viewer' and not exists (
            select 1 from scim_user_links l
            join scim_connections c on c.id = l.connection_id
            where l.user_id = u.id and l.owner and c.revoked_at is null)
            and not exists (
              select 1 from role_assignments a where a.user_id = u.id)
          then 'takeOver'
          else 'elsewhere' end as standing
        from users u where u.id = any(${userIds}::int[])
        order by u.id`;
      const elsewhere = rows.filter((r) => r.standing === "elsewhere");
      if (elsewhere.length > 0) {
        if (!change) return refuse("managed_elsewhere");
        const changes = await roles.wouldChange(
          tx,
          connectionId,
          elsewhere.map((r) => r.id),
          change,
        );
        if (changes.length > 0) return refuse("managed_elsewhere");
      }
      return {
        governed: rows.filter((r) => r.standing !== "elsewhere").map((r) =>
          r.id
        ),
        takeOver: rows.filter((r) => r.standing === "takeOver").map((r) => ({
          id: r.id,
          username: r.username,
        })),
      };
    },

    /**
     * Makes the users the connection takes over its own (a deleted
     * connection's ownership of them ends), each recorded.
     */
    async take(tx: TransactionSql, write: ScimWrite, users: AuditParty[]) {
      if (users.length === 0) return;
      const ids = users.map((u) => u.id);
      await tx`
        update scim_user_links set owner = false
        where user_id = any(${ids}::int[]) and owner
          and connection_id <> ${write.connection.id}`;
      await tx`
        insert into scim_user_links (connection_id, user_id, owner)
        select ${write.connection.id}, unnest(${ids}::int[]), true
        on conflict (connection_id, user_id) do update set owner = true`;
      for (const user of users) {
        await recordAudit(
          tx,
          scimEvents.userLinked(user, write.connection, write.context),
        );
      }
    },
  };
}

export type ScimOwners = ReturnType<typeof createScimOwners>;
