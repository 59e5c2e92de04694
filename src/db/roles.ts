import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { type GroupRef, ROLE_DELETED, roleEvents } from "../audit/events.ts";
import {
  type Access,
  grantedBy,
  holdsOver,
  type Permission,
  reachOfGroup,
} from "../auth/permissions.ts";
import { type Refusal, refuse } from "../refusal.ts";
import { recordAudit } from "./audit.ts";
import { iso } from "./time.ts";
import { orDuplicate } from "./user-rows.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";

/** A role as the service shows it. */
export interface RoleDefinition {
  id: number;
  name: string;
  description: string;
  permissions: Permission[];
  createdAt: string;
}

/** A role and its row version (what its `ETag` names). */
export interface VersionedRole {
  role: RoleDefinition;
  version: number;
}

export interface NewRole {
  name: string;
  /** canonicalKey(name): unique. */
  nameKey: string;
  description: string;
  permissions: Permission[];
}

export type RoleChange = Partial<NewRole>;

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
 * Roles and their assignments (migration 030). Every write is the caller's
 * (asCaller: re-checked, `roles:manage` and what the write grants), locks
 * the role's row (a change or deletion for update, an assignment for
 * share, so a role deleted meanwhile is seen), and records what it did in
 * the same transaction. `access` is the caller's on this request: a role
 * or assignment granting what it does not hold, over a reach it does not
 * cover (permissions.ts's `holdsOver`), answers `beyond_held`.
 */
export function createRoleStore(sql: Sql, { asCaller }: Writer) {
  const shown = sql`r.id, r.name, r.description, r.permissions,
    ${iso(sql, "r.created_at")} as "createdAt"`;
  const shownAssignment = sql`a.id, a.role_id as "roleId",
    a.user_id as "userId", a.group_id as "groupId",
    a.reach_group_id as "reachGroupId",
    ${iso(sql, "a.created_at")} as "createdAt"`;

  const lockRole = async (
    tx: TransactionSql,
    id: number,
    mode: "update" | "share",
  ) => {
    const [row] = await tx<(RoleDefinition & { version: number })[]>`
      select ${shown}, r.version from roles r where r.id = ${id}
      ${mode === "update" ? tx`for update` : tx`for share`}`;
    return row;
  };

  const userParty = async (tx: TransactionSql, id: number) => {
    const [row] = await tx<AuditParty[]>`
      select id, username from users where id = ${id}`;
    return row;
  };

  return {
    async list(): Promise<RoleDefinition[]> {
      return await sql<
        RoleDefinition[]
      >`select ${shown} from roles r order by r.id`;
    },

    async get(id: number): Promise<VersionedRole | undefined> {
      const [row] = await sql<(RoleDefinition & { version: number })[]>`
        select ${shown}, r.version from roles r where r.id = ${id}`;
      if (!row) return undefined;
      const { version, ...role } = row;
      return { role, version };
    },

    /** A new role; `duplicate` when its name's canonical key is another role's. */
    async create(
      role: NewRole,
      write: CallerWrite,
    ): Promise<VersionedRole | Refusal<"duplicate"> | CallerRefusal> {
      return await orDuplicate(
        asCaller(write, "share", async (tx, actor) => {
          const [row] = await tx<(RoleDefinition & { version: number })[]>`
            insert into roles as r (name, name_key, description, permissions)
            values (${role.name}, ${role.nameKey}, ${role.description},
              ${role.permissions})
            returning ${shown}, r.version`;
          const { version, ...created } = row;
          await recordAudit(
            tx,
            roleEvents.role("role.created", actor, created, write.context),
          );
          return { role: created, version };
        }),
      );
    },

    /**
     * Changes what differs, under the role's lock; `precondition_failed`
     * when `versions` (from If-Match) do not name its version, `beyond_held`
     * when the role grants, before or after, what the caller may not.
     */
    async update(
      id: number,
      change: RoleChange,
      access: Access,
      write: CallerWrite,
      versions?: number[],
    ): Promise<
      | VersionedRole
      | Refusal<
        "not_found" | "duplicate" | "precondition_failed" | "beyond_held"
      >
      | CallerRefusal
    > {
      return await orDuplicate(
        asCaller(write, "share", async (tx, actor) => {
          const before = await lockRole(tx, id, "update");
          if (!before) return refuse("not_found");
          if (versions && !versions.includes(before.version)) {
            return refuse("precondition_failed");
          }
          if (!holdsOver(access, before.permissions)) {
            return refuse("beyond_held");
          }
          if (change.permissions !== undefined) {
            // Every holder holds the new list over their assignment's
            // reach: the caller must hold it over each (under the role's
            // lock, which an assignment made meanwhile waits for).
            const reaches = await tx<{ reach: number | null }[]>`
              select distinct reach_group_id as reach from role_assignments
              where role_id = ${id}`;
            const within = reaches.every(({ reach }) =>
              holdsOver(
                access,
                grantedBy(change.permissions!, reach),
                reachOfGroup(reach),
              )
            );
            if (!within) return refuse("beyond_held");
          }
          const changed: string[] = [];
          if (change.name !== undefined && change.name !== before.name) {
            changed.push("name");
          }
          if (
            change.description !== undefined &&
            change.description !== before.description
          ) changed.push("description");
          if (
            change.permissions !== undefined &&
            change.permissions.join() !== before.permissions.join()
          ) changed.push("permissions");
          const { version: v, ...kept } = before;
          if (changed.length === 0) return { role: kept, version: v };
          const [row] = await tx<(RoleDefinition & { version: number })[]>`
            update roles r set
              name = ${change.name ?? before.name},
              name_key = ${change.nameKey ?? tx`name_key`},
              description = ${change.description ?? before.description},
              permissions = ${change.permissions ?? before.permissions},
              version = version + 1
            where r.id = ${id}
            returning ${shown}, r.version`;
          const { version, ...updated } = row;
          await recordAudit(
            tx,
            roleEvents.role(
              "role.updated",
              actor,
              updated,
              write.context,
              changed,
            ),
          );
          return { role: updated, version };
        }),
      );
    },

    /**
     * Deletes the role and ends its assignments first, each recorded as
     * `assignment.deleted` `{reason: "role deleted"}`, then `role.deleted`.
     */
    async remove(
      id: number,
      access: Access,
      write: CallerWrite,
      versions?: number[],
    ): Promise<
      | "deleted"
      | Refusal<"not_found" | "precondition_failed" | "beyond_held">
      | CallerRefusal
    > {
      return await asCaller(write, "share", async (tx, actor) => {
        const before = await lockRole(tx, id, "update");
        if (!before) return refuse("not_found");
        if (versions && !versions.includes(before.version)) {
          return refuse("precondition_failed");
        }
        if (!holdsOver(access, before.permissions)) {
          return refuse("beyond_held");
        }
        const ended = await tx<
          {
            id: number;
            user: AuditParty | null;
            group: GroupRef | null;
            reach: number | null;
          }[]
        >`
          delete from role_assignments a where a.role_id = ${id}
          returning a.id, a.reach_group_id as reach,
            (select json_build_object('id', u.id, 'username', u.username)
              from users u where u.id = a.user_id) as user,
            (select json_build_object('id', g.id,
                'displayName', g.display_name)
              from scim_groups g where g.id = a.group_id) as group`;
        const role = { id: before.id, name: before.name };
        for (const a of ended.toSorted((x, y) => x.id - y.id)) {
          await recordAudit(
            tx,
            roleEvents.assignment(
              "assignment.deleted",
              actor,
              a.user,
              {
                id: a.id,
                role,
                ...a.group && { group: a.group },
                ...a.reach !== null && { reachGroupId: a.reach },
              },
              write.context,
              ROLE_DELETED,
            ),
          );
        }
        await tx`delete from roles where id = ${id}`;
        await recordAudit(
          tx,
          roleEvents.role("role.deleted", actor, before, write.context),
        );
        return "deleted";
      });
    },

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

export type RoleStore = ReturnType<typeof createRoleStore>;
