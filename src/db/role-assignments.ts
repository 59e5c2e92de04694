import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { type GroupRef, roleEvents } from "../audit/role-events.ts";
import {
  type Access,
  grantedBy,
  holdsOver,
  reachOfGroup,
} from "../auth/permissions.ts";
import { type Refusal, refuse } from "../refusal.ts";
import { recordAudit } from "./audit.ts";
import { lockRole } from "./roles.ts";
import { iso } from "./time.ts";
import { orDuplicate } from "./user-rows.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";

/** A role given to a user, or to a group (each of its members holds it): one of `userId` and `groupId`. */
export interface Assignment {
  id: number;
  roleId: number;
  userId?: number;
  groupId?: number;
  /** The group whose members the holder acts on; null: every user. */
  reachGroupId: number | null;
  createdAt: string;
}

/** Who holds an assignment. */
export type Holder = { userId: number } | { groupId: number };

/** An assignment's row as the answer shows it: the holder it has not, absent. */
const holderOnly = (
  row: Assignment & { userId?: number | null; groupId?: number | null },
): Assignment => {
  const { userId, groupId, ...rest } = row;
  return userId == null
    ? { ...rest, groupId: groupId as number }
    : { ...rest, userId };
};

/**
 * Roles given to users and groups (migration 030), each over a reach. A
 * write is the caller's (asCaller: re-checked, `roles:manage` and what the
 * assignment grants), locks the role's row for share (roles.ts's
 * `lockRole`: a deletion meanwhile waits or is seen), and records what it
 * did in the same transaction. An assignment granting what the caller does
 * not hold over its reach (permissions.ts's `holdsOver`) answers
 * `beyond_held`.
 */
export function createRoleAssignments(sql: Sql, { asCaller }: Writer) {
  const shownAssignment = sql`a.id, a.role_id as "roleId",
    a.user_id as "userId", a.group_id as "groupId",
    a.reach_group_id as "reachGroupId",
    ${iso(sql, "a.created_at")} as "createdAt"`;

  const userParty = async (tx: TransactionSql, id: number) => {
    const [row] = await tx<AuditParty[]>`
      select id, username from users where id = ${id}`;
    return row;
  };

  return {
    async assignments(
      filter: { userId?: number; groupId?: number; roleId?: number },
    ): Promise<Assignment[]> {
      const rows = await sql<Assignment[]>`
        select ${shownAssignment} from role_assignments a
        where true
          ${
        filter.userId === undefined
          ? sql``
          : sql`and a.user_id = ${filter.userId}`
      }
          ${
        filter.groupId === undefined
          ? sql``
          : sql`and a.group_id = ${filter.groupId}`
      }
          ${
        filter.roleId === undefined
          ? sql``
          : sql`and a.role_id = ${filter.roleId}`
      }
        order by a.id`;
      return rows.map(holderOnly);
    },

    /**
     * Gives the role to the user, under the user's lock (for update: the
     * caller's re-check compares what the user holds with what the caller
     * does) and the role's (for share, so a deletion waits or is seen); or
     * to a group, under the group's lock (for share: a deletion of the
     * group, or a change of its members, waits or is seen). With
     * `reachGroupId`, limited to that group's members (locked for share:
     * its deletion waits, then ends the assignment): the caller must hold
     * what it grants over that group (or everyone), else `beyond_held`.
     */
    async assign(
      roleId: number,
      holder: Holder,
      reachGroupId: number | null,
      access: Access,
      write: CallerWrite,
    ): Promise<
      | Assignment
      | Refusal<
        | "not_found"
        | "user_not_found"
        | "group_not_found"
        | "duplicate"
        | "beyond_held"
      >
      | CallerRefusal
    > {
      const lock = "userId" in holder
        ? { update: holder.userId }
        : "share" as const;
      return await orDuplicate(
        asCaller(write, lock, async (tx, actor) => {
          let user: AuditParty | null = null;
          let group: GroupRef | undefined;
          if ("userId" in holder) {
            user = await userParty(tx, holder.userId);
            if (!user) return refuse("user_not_found");
          } else {
            [group] = await tx<GroupRef[]>`
              select id, display_name as "displayName" from scim_groups
              where id = ${holder.groupId} for share`;
            if (!group) return refuse("group_not_found");
          }
          if (reachGroupId !== null) {
            const [reach] = await tx`
              select 1 from scim_groups where id = ${reachGroupId} for share`;
            if (!reach) return refuse("group_not_found");
          }
          const role = await lockRole(tx, roleId, "share");
          if (!role) return refuse("not_found");
          const within = holdsOver(
            access,
            grantedBy(role.permissions, reachGroupId),
            reachOfGroup(reachGroupId),
          );
          if (!within) return refuse("beyond_held");
          const [row] = await tx<Assignment[]>`
            insert into role_assignments as a
              (role_id, user_id, group_id, reach_group_id)
            values (${roleId}, ${user?.id ?? null}, ${group?.id ?? null},
              ${reachGroupId})
            returning ${shownAssignment}`;
          await recordAudit(
            tx,
            roleEvents.assignment(
              "assignment.created",
              actor,
              user,
              {
                id: row.id,
                role: { id: role.id, name: role.name },
                ...group && { group },
                ...reachGroupId !== null && { reachGroupId },
              },
              write.context,
            ),
          );
          return holderOnly(row);
        }),
      );
    },

    /** Ends the assignment, under its user's lock (the caller must hold what the user holds), or its group's. */
    async unassign(
      id: number,
      write: CallerWrite,
    ): Promise<"deleted" | Refusal<"not_found"> | CallerRefusal> {
      const [found] = await sql<
        { userId: number | null; groupId: number | null }[]
      >`
        select user_id as "userId", group_id as "groupId"
        from role_assignments where id = ${id}`;
      if (!found) return refuse("not_found");
      const lock = found.userId === null
        ? "share" as const
        : { update: found.userId };
      return await asCaller(write, lock, async (tx, actor) => {
        const [row] = await tx<
          {
            id: number;
            roleId: number;
            role: string;
            user: AuditParty | null;
            group: GroupRef | null;
            reach: number | null;
          }[]
        >`
          delete from role_assignments a using roles r
          where a.id = ${id}
            and a.user_id is not distinct from ${found.userId}
            and a.group_id is not distinct from ${found.groupId}
            and r.id = a.role_id
          returning a.id, r.id as "roleId", r.name as role,
            a.reach_group_id as reach,
            (select json_build_object('id', u.id, 'username', u.username)
              from users u where u.id = a.user_id) as user,
            (select json_build_object('id', g.id,
                'displayName', g.display_name)
              from scim_groups g where g.id = a.group_id) as group`;
        if (!row) return refuse("not_found");
        await recordAudit(
          tx,
          roleEvents.assignment(
            "assignment.deleted",
            actor,
            row.user,
            {
              id: row.id,
              role: { id: row.roleId, name: row.role },
              ...row.group && { group: row.group },
              ...row.reach !== null && { reachGroupId: row.reach },
            },
            write.context,
          ),
        );
        return "deleted";
      });
    },
  };
}
