/**
 * The roles a connection's groups give: `admin` to a member of one of its
 * groups its adminGroups name (display names without regard to case),
 * `viewer` otherwise. A deleted connection's groups give nothing. Only the
 * users the connection owns (scim-owners.ts) take the role its groups give.
 */
import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditEvent,
  auditEvents,
  MINTER_REMOVED,
} from "../audit/events.ts";
import { byConnection } from "../audit/scim-events.ts";
import type { Role } from "../users/user.ts";
import { revokeMinted } from "./api-keys.ts";
import { recordAudit } from "./audit.ts";
import type { ScimWrite } from "./scim-types.ts";

/** A group as a write would leave it: its id (none yet: a new group), name and members. */
export interface GroupChange {
  groupId: number | null;
  displayName: string;
  members: number[];
}

/**
 * Who changes roles: a connection's write, or an admin's change of the
 * connection (`actor`), recorded as theirs with the connection named.
 */
export type RoleWrite = ScimWrite & { actor?: AuditParty };

/** The record as the write makes it: the connection named, the admin as actor if one acted. */
export const recordedAs = (e: AuditEvent, by: RoleWrite): AuditEvent => ({
  ...byConnection(e, by.connection),
  ...by.actor && {
    actor: {
      id: by.actor.id,
      username: by.actor.username,
      ...by.actor.keyId !== undefined && { keyId: by.actor.keyId },
    },
  },
});

export function createScimRoles(sql: Sql) {
  /**
   * Whether `user` (an SQL expression of a user id) is admin by the live
   * connection's groups, or by them as `change` would leave one of them.
   */
  const adminBy = (
    connectionId: number,
    user: PendingQuery<Row[]>,
    change?: GroupChange,
  ) =>
    sql`exists (
      select 1 from scim_connections c
      where c.id = ${connectionId} and c.revoked_at is null and (
        exists (
          select 1 from scim_members m join scim_groups g on g.id = m.group_id
          where m.user_id = ${user} and g.connection_id = c.id
            and g.id is distinct from ${change?.groupId ?? null}::int
            and lower(g.display_name) in (
              select lower(a) from unnest(c.admin_groups) a))
        ${
      change
        ? sql`or (${user} = any(${change.members}::int[])
            and lower(${change.displayName}) in (
              select lower(a) from unnest(c.admin_groups) a))`
        : sql``
    }))`;

  /** Revokes the keys a user minted for others, as every demotion and removal does. */
  const revokeFor = async (
    tx: TransactionSql,
    userId: number,
    by: RoleWrite,
  ) => {
    for (const { owner, ...key } of await revokeMinted(tx, userId)) {
      await recordAudit(
        tx,
        recordedAs(
          auditEvents.keyRevoked(
            null,
            owner,
            key,
            by.context,
            MINTER_REMOVED,
          ),
          by,
        ),
      );
    }
  };

  return {
    adminBy,
    revokeFor,

    /**
     * The users whose role the connection's groups, as `change` would leave
     * them, would change: their role now and the one they would get.
     */
    async wouldChange(
      tx: TransactionSql,
      connectionId: number,
      userIds: number[],
      change: GroupChange,
    ): Promise<{ id: number; role: Role }[]> {
      if (userIds.length === 0) return [];
      return await tx<{ id: number; role: Role }[]>`
        select u.id, u.role from users u
        where u.id = any(${userIds}::int[])
          and u.role <> case when ${
        adminBy(connectionId, sql`u.id`, change)
      } then 'admin' else 'viewer' end`;
    },

    /**
     * Gives each of these users the connection owns the role its groups
     * give (in no group at all too: groups govern them now). Changes are
     * recorded; a demoted admin's keys minted for others are revoked.
     */
    async apply(
      tx: TransactionSql,
      connectionId: number,
      userIds: number[],
      by: RoleWrite,
    ) {
      if (userIds.length === 0) return;
      const changed = await tx<
        (AuditParty & { before: Role; role: Role })[]
      >`
        update users u set role = d.role
        from (
          select t.user_id, case when ${
        adminBy(connectionId, sql`t.user_id`)
      } then 'admin' else 'viewer' end as role
          from unnest(${userIds}::int[]) t(user_id)
        ) d, (select id, role as before from users
          where id = any(${userIds}::int[]) order by id for update) o
        where u.id = d.user_id and o.id = u.id and u.role <> d.role
          and exists (select 1 from scim_user_links l
            where l.user_id = u.id and l.connection_id = ${connectionId}
              and l.owner)
        returning u.id, u.username, o.before, u.role`;
      for (const row of changed.toSorted((a, b) => a.id - b.id)) {
        await recordAudit(
          tx,
          recordedAs(
            auditEvents.roleChanged(
              null,
              row,
              row.before,
              row.role,
              by.context,
            ),
            by,
          ),
        );
        if (row.before === "admin") await revokeFor(tx, row.id, by);
      }
    },
  };
}

export type ScimRoles = ReturnType<typeof createScimRoles>;
