import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import {
  type GroupRef,
  ROLE_DELETED,
  roleEvents,
} from "../audit/role-events.ts";
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

/** A role's columns as the service shows them (`r`: its row in roles). */
const shownRole = (q: Sql | TransactionSql) =>
  q`r.id, r.name, r.description, r.permissions,
    ${iso(q, "r.created_at")} as "createdAt"`;

/**
 * The role and its version, its row locked: for update to change or delete
 * it, for share to assign it (a deletion meanwhile waits or is seen).
 */
export async function lockRole(
  tx: TransactionSql,
  id: number,
  mode: "update" | "share",
): Promise<(RoleDefinition & { version: number }) | undefined> {
  const [row] = await tx<(RoleDefinition & { version: number })[]>`
    select ${shownRole(tx)}, r.version from roles r where r.id = ${id}
    ${mode === "update" ? tx`for update` : tx`for share`}`;
  return row;
}

/**
 * Roles (migration 030); their assignments are role-assignments.ts's. Every
 * write is the caller's (asCaller: re-checked, `roles:manage` and what the
 * write grants), locks the role's row (a change or deletion for update, an
 * assignment for share, so a role deleted meanwhile is seen), and records
 * what it did in the same transaction. `access` is the caller's on this
 * request: a role or assignment granting what it does not hold, over a
 * reach it does not cover (permissions.ts's `holdsOver`), answers
 * `beyond_held`.
 */
export function createRoleStore(sql: Sql, { asCaller }: Writer) {
  const shown = shownRole(sql);

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
  };
}

export type RoleStore = ReturnType<typeof createRoleStore>;
