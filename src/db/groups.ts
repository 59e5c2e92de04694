import type { Sql, TransactionSql } from "postgres";
import type { AuditContext } from "../audit/audit-event.ts";
import type { AuditParty } from "../audit/chain.ts";
import {
  GROUP_DELETED,
  type GroupRef,
  roleEvents,
} from "../audit/role-events.ts";
import { isRefusal, type Refusal, refuse } from "../refusal.ts";
import {
  type Access,
  accessOf,
  covers,
  grantedBy,
  holdsOver,
  reachOfGroup,
} from "../auth/permissions.ts";
import type { Role } from "../users/user.ts";
import { revokeGroupKeys } from "./api-keys.ts";
import { recordAudit } from "./audit.ts";
import { grantedTo } from "./grants.ts";
import { memberOf } from "./reach.ts";
import { iso } from "./time.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";

/** A group as /api shows it. */
export interface Group {
  id: number;
  displayName: string;
  externalId: string | null;
  /** The SCIM connection that owns it; null for a group made in /api. */
  connectionId: number | null;
  members: { id: number; username: string }[];
  createdAt: string;
}

export interface GroupChange {
  displayName?: string;
  externalId?: string | null;
}

/** How a members request changes the list: replace it, add to it, take from it. */
export type MembersChange = "replace" | "add" | "remove";

type GroupRefusal = Refusal<"not_found" | "provider_owned">;

/**
 * Ends every assignment a group carries, and every one limited to its
 * members (`reach_group_id`), each recorded as `assignment.deleted`
 * `{reason: "group deleted"}`, then revokes the keys limited to them
 * (api-keys.ts): run in the transaction that deletes the group, through
 * /api or SCIM, before the group's own row goes (the assignments reference
 * it). A SCIM deletion has no person behind it: its records' actor is none.
 */
export async function endGroupAssignments(
  tx: TransactionSql,
  group: { id: number; displayName: string },
  actor: AuditParty | null,
  context: AuditContext,
) {
  const ended = await tx<
    {
      id: number;
      roleId: number;
      role: string;
      user: AuditParty | null;
      holder: GroupRef | null;
      reach: number | null;
    }[]
  >`
    delete from role_assignments a using roles r
    where (a.group_id = ${group.id} or a.reach_group_id = ${group.id})
      and r.id = a.role_id
    returning a.id, r.id as "roleId", r.name as role,
      a.reach_group_id as reach,
      (select json_build_object('id', u.id, 'username', u.username)
        from users u where u.id = a.user_id) as user,
      (select json_build_object('id', g.id, 'displayName', g.display_name)
        from scim_groups g where g.id = a.group_id) as holder`;
  for (const a of ended.toSorted((x, y) => x.id - y.id)) {
    await recordAudit(
      tx,
      roleEvents.assignment(
        "assignment.deleted",
        actor,
        a.user,
        {
          id: a.id,
          role: { id: a.roleId, name: a.role },
          ...a.holder && { group: a.holder },
          ...a.reach !== null && { reachGroupId: a.reach },
        },
        context,
        GROUP_DELETED,
      ),
    );
  }
  await revokeGroupKeys(tx, group.id, actor, context);
}

/**
 * The groups of /api: the same rows SCIM reads and writes (`scim_groups`,
 * `scim_members`). A group a live connection owns is read-only here
 * (`provider_owned`): its identity provider would overwrite any change;
 * once the connection is deleted, nothing would, and /api may change it.
 * Every write is the caller's (asCaller), locks the group's row for
 * update, and records what it did in the same transaction.
 */
export function createGroupStore(sql: Sql, { asCaller }: Writer) {
  const shown = (q: Sql | TransactionSql) =>
    q`g.id, g.display_name as "displayName", g.external_id as "externalId",
      g.connection_id as "connectionId",
      coalesce((select json_agg(json_build_object('id', u.id,
          'username', u.username) order by u.id)
        from scim_members m join users u on u.id = m.user_id
        where m.group_id = g.id), '[]'::json) as members,
      ${iso(q as Sql, "g.created_at")} as "createdAt"`;

  const read = async (q: Sql | TransactionSql, id: number) => {
    const [row] = await q<Group[]>`
      select ${shown(q)} from scim_groups g where g.id = ${id}`;
    return row;
  };

  /** The group's row, locked; refused when there is none or a connection owns it. */
  const lockOwn = async (tx: TransactionSql, id: number) => {
    const [row] = await tx<
      { id: number; displayName: string; owned: boolean }[]
    >`
      select g.id, g.display_name as "displayName",
        c.id is not null and c.revoked_at is null as owned
      from scim_groups g left join scim_connections c on c.id = g.connection_id
      where g.id = ${id} for update of g`;
    if (!row) return refuse("not_found");
    if (row.owned) return refuse("provider_owned");
    return { id: row.id, displayName: row.displayName };
  };

  return {
    async list(): Promise<Group[]> {
      return await sql<Group[]>`
        select ${shown(sql)} from scim_groups g order by g.id`;
    },

    async get(id: number): Promise<Group | undefined> {
      return await read(sql, id);
    },

    async create(
      group: { displayName: string; externalId: string | null },
      write: CallerWrite,
    ): Promise<Group | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const [row] = await tx<{ id: number }[]>`
          insert into scim_groups (connection_id, display_name, external_id)
          values (null, ${group.displayName}, ${group.externalId})
          returning id`;
        await recordAudit(
          tx,
          roleEvents.group(
            "group.created",
            actor,
            { id: row.id, displayName: group.displayName },
            { externalId: group.externalId },
            write.context,
          ),
        );
        return await read(tx, row.id);
      });
    },

    async update(
      id: number,
      change: GroupChange,
      write: CallerWrite,
    ): Promise<Group | GroupRefusal | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const cur = await lockOwn(tx, id);
        if (isRefusal(cur)) return cur;
        const before = await read(tx, id);
        const changed: string[] = [];
        if (
          change.displayName !== undefined &&
          change.displayName !== before.displayName
        ) changed.push("displayName");
        if (
          change.externalId !== undefined &&
          change.externalId !== before.externalId
        ) changed.push("externalId");
        if (changed.length === 0) return before;
        const displayName = change.displayName ?? before.displayName;
        await tx`
          update scim_groups set display_name = ${displayName},
            external_id = ${
          change.externalId === undefined
            ? before.externalId
            : change.externalId
        },
            modified_at = clock_timestamp(), version = version + 1
          where id = ${id}`;
        await recordAudit(
          tx,
          roleEvents.group(
            "group.updated",
            actor,
            { id, displayName },
            { changed },
            write.context,
          ),
        );
        return await read(tx, id);
      });
    },

    /** Ends the group's assignments (recorded), then deletes it: its members lose what it gave from their next request. */
    async remove(
      id: number,
      write: CallerWrite,
    ): Promise<"deleted" | GroupRefusal | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const cur = await lockOwn(tx, id);
        if (isRefusal(cur)) return cur;
        await endGroupAssignments(tx, cur, actor, write.context);
        await tx`delete from scim_groups where id = ${id}`;
        await recordAudit(
          tx,
          roleEvents.group(
            "group.deleted",
            actor,
            cur,
            {},
            write.context,
          ),
        );
        return "deleted";
      });
    },

    /**
     * Replaces, adds to or takes from the members; nobody joins or leaves
     * who holds a permission, or a reach, the caller does not
     * (`caller_outranked`, an admin's every one included). Adding someone
     * to a group grants what the group's roles grant, each over its
     * assignment's reach, and widens every assignment limited to the
     * group to them: `access` (the caller's) must hold the former over
     * those reaches and the latter over each user added (by the groups
     * they are in before), read under the group's lock (an assignment
     * made meanwhile waits for it or is seen), else `beyond_held`.
     */
    async members(
      id: number,
      how: MembersChange,
      userIds: readonly number[],
      access: Access,
      write: CallerWrite,
    ): Promise<
      | Group
      | GroupRefusal
      | Refusal<"user_not_found" | "beyond_held" | "caller_outranked">
      | CallerRefusal
    > {
      return await asCaller(write, "share", async (tx, actor) => {
        const cur = await lockOwn(tx, id);
        if (isRefusal(cur)) return cur;
        const ids = [...new Set(userIds)];
        const found = ids.length === 0 ? [] : await tx<{ id: number }[]>`
          select id from users where id = any(${ids}::int[]) for share`;
        if (found.length !== ids.length) return refuse("user_not_found");
        const have = (await tx<{ id: number }[]>`
          select user_id as id from scim_members where group_id = ${id}`)
          .map((r) => r.id);
        const before = new Set(have);
        const given = new Set(ids);
        const added = how === "remove"
          ? []
          : ids.filter((u) => !before.has(u)).sort((a, b) => a - b);
        const removed = how === "add"
          ? []
          : how === "remove"
          ? have.filter((u) => given.has(u))
          : have.filter((u) => !given.has(u));
        removed.sort((a, b) => a - b);
        // A membership changed is a grant given or ended: nobody does it
        // to someone who holds more than they do (read under the users'
        // share locks above, so a grant to them meanwhile is seen).
        const concerned = [...added, ...removed];
        if (concerned.length > 0) {
          const standing = await tx<
            { role: Role; granted: string[] | null }[]
          >`
            select u.role, ${grantedTo(tx, "u")} as granted from users u
            where u.id = any(${concerned}::int[])`;
          if (
            standing.some((u) => !covers(access, accessOf(u.role, u.granted)))
          ) {
            return refuse("caller_outranked");
          }
        }
        if (added.length > 0) {
          // The group's roles, each over its assignment's reach; and the
          // assignments limited to the group, whose reach the new members
          // join.
          const grants = await tx<
            { permissions: string[]; reach: number | null; widened: boolean }[]
          >`
            select r.permissions, a.reach_group_id as reach,
              a.group_id is distinct from ${id} as widened
            from role_assignments a join roles r on r.id = a.role_id
            where a.group_id = ${id} or a.reach_group_id = ${id}`;
          const given = grants.filter((g) => !g.widened).every((g) =>
            holdsOver(
              access,
              grantedBy(g.permissions, g.reach),
              reachOfGroup(g.reach),
            )
          );
          const limited = grants.filter((g) => g.reach === id).flatMap((g) =>
            grantedBy(g.permissions, g.reach)
          );
          const groups = limited.length === 0 ? [] : await tx<
            { groups: number[] }[]
          >`
            select ${memberOf(tx, "u")} as groups from users u
            where u.id = any(${added}::int[])`;
          const widening = groups.every((u) =>
            holdsOver(access, limited, { memberOf: u.groups })
          );
          if (!given || !widening) return refuse("beyond_held");
          await tx`
            insert into scim_members (group_id, user_id)
            select ${id}, unnest(${added}::int[])`;
        }
        if (removed.length > 0) {
          await tx`
            delete from scim_members
            where group_id = ${id} and user_id = any(${removed}::int[])`;
        }
        if (added.length > 0 || removed.length > 0) {
          await tx`
            update scim_groups set modified_at = clock_timestamp(),
              version = version + 1
            where id = ${id}`;
          await recordAudit(
            tx,
            roleEvents.group(
              "group.members_changed",
              actor,
              cur,
              { added, removed },
              write.context,
            ),
          );
        }
        return await read(tx, id);
      });
    },
  };
}

export type GroupStore = ReturnType<typeof createGroupStore>;
