/**
 * A connection's groups and their members. A change of members (or of the
 * name, or a deletion) asks the connection's standing towards every member
 * whose role it may change (scim-owners.ts) before it writes, then applies
 * the roles of the members it governs.
 */
import type { Sql, TransactionSql } from "postgres";
import { scimEvents } from "../audit/scim-events.ts";
import { recordAudit } from "./audit.ts";
import { endGroupAssignments } from "./groups.ts";
import type { ScimOwners } from "./scim-owners.ts";
import type { ScimRoles } from "./scim-roles.ts";
import {
  orTaken,
  type ScimGroupRow,
  type ScimGroupState,
  type ScimRefusal,
  type ScimRemoved,
  type ScimWrite,
  unknownMembers,
} from "./scim-types.ts";
import { iso } from "./time.ts";
import type { Writer } from "./write.ts";
import { isRefusal, type Refusal, refuse } from "../refusal.ts";

/** The members of groups, with their usernames as `display`. */
export const createGroupMembers = (sql: Sql) => async (groupIds: number[]) => {
  const rows = await sql<
    { groupId: number; value: number; display: string }[]
  >`
    select m.group_id as "groupId", u.id as value, u.username as display
    from scim_members m join users u on u.id = m.user_id
    where m.group_id = any(${groupIds}::int[])
    order by m.group_id, u.id`;
  const out = new Map<number, { value: number; display: string }[]>();
  for (const { groupId, ...m } of rows) {
    const list = out.get(groupId) ?? [];
    list.push(m);
    out.set(groupId, list);
  }
  return out;
};

/** What the groups' rows show. */
export const groupShownOf = (sql: Sql) =>
  sql`g.id, g.display_name as "displayName",
    g.external_id as "externalId", ${iso(sql, "g.created_at")} as created,
    ${iso(sql, "g.modified_at")} as modified, g.version::text as version`;

export function createScimGroups(
  sql: Sql,
  { transaction }: Writer,
  { roles, owners }: { roles: ScimRoles; owners: ScimOwners },
) {
  const groupShown = groupShownOf(sql);
  const membersOf = createGroupMembers(sql);
  /** The group as a write answers it, read in the write's transaction. */
  const shownIn = async (tx: TransactionSql, id: number) => {
    const [row] = await tx<ScimGroupRow[]>`
      select ${groupShown} from scim_groups g where g.id = ${id}`;
    return row;
  };

  const memberIdsMissing = async (tx: TransactionSql, ids: number[]) => {
    if (ids.length === 0) return [];
    const found = await tx<{ id: number }[]>`
      select id from users where id = any(${ids}::int[])`;
    const known = new Set(found.map((r) => r.id));
    return ids.filter((id) => !known.has(id));
  };

  return {
    async get(
      connectionId: number,
      id: number,
      withMembers: boolean,
    ): Promise<ScimGroupRow | undefined> {
      const [row] = await sql<ScimGroupRow[]>`
        select ${groupShown} from scim_groups g
        where g.id = ${id} and g.connection_id = ${connectionId}`;
      if (row && withMembers) {
        row.members = await membersOf([row.id]).then((m) =>
          m.get(row.id) ?? []
        );
      }
      return row;
    },

    async create(
      s: ScimGroupState,
      write: ScimWrite,
    ): Promise<ScimGroupRow | ScimRefusal | Refusal<"managed_elsewhere">> {
      return await orTaken(transaction(write.writeBy, async (tx) => {
        const members = [...new Set(s.members)];
        const missing = await memberIdsMissing(tx, members);
        if (missing.length > 0) return unknownMembers(missing);
        const allowed = await owners.decide(tx, write, members, {
          groupId: null,
          displayName: s.displayName,
          members,
        });
        if (isRefusal(allowed)) return allowed;
        await owners.take(tx, write, allowed.takeOver);
        const [row] = await tx<{ id: number }[]>`
          insert into scim_groups (connection_id, display_name, external_id)
          values (${write.connection.id}, ${s.displayName}, ${s.externalId})
          returning id`;
        await tx`
          insert into scim_members (group_id, user_id)
          select ${row.id}, unnest(${members}::int[])`;
        await recordAudit(
          tx,
          scimEvents.group(
            "group.created",
            {
              id: row.id,
              displayName: s.displayName,
            },
            {
              externalId: s.externalId,
              added: members.length,
            },
            write.connection,
            write.context,
          ),
        );
        await roles.apply(tx, write.connection.id, allowed.governed, write);
        return await shownIn(tx, row.id);
      }));
    },

    /**
     * Replaces the group with what `decide` makes of it (members as ids),
     * in one transaction holding its row; members added and removed in
     * one statement each, whatever their number, and the roles of every
     * member whose membership (or group's name) changed applied.
     */
    async write(
      id: number,
      ifVersions: string[] | undefined,
      decide: (
        current: ScimGroupState & { id: number },
      ) => ScimGroupState | ScimRefusal,
      write: ScimWrite,
    ): Promise<
      | ScimGroupRow
      | ScimRefusal
      | Refusal<"not_found">
      | Refusal<"managed_elsewhere">
      | Refusal<"precondition_failed">
    > {
      return await orTaken(transaction(write.writeBy, async (tx) => {
        const [cur] = await tx<
          {
            id: number;
            displayName: string;
            externalId: string | null;
            version: string;
          }[]
        >`
          select id, display_name as "displayName",
            external_id as "externalId", version::text
          from scim_groups
          where id = ${id} and connection_id = ${write.connection.id}
          for update`;
        if (!cur) return refuse("not_found");
        if (ifVersions && !ifVersions.includes(cur.version)) {
          return refuse("precondition_failed");
        }
        const have = (await tx<{ id: number }[]>`
          select user_id as id from scim_members where group_id = ${id}`)
          .map((r) => r.id);
        const next = decide({ ...cur, members: have });
        if (isRefusal(next)) return next;
        const before = new Set(have);
        const after = new Set(next.members);
        const added = [...after].filter((m) => !before.has(m));
        const removed = have.filter((m) => !after.has(m));
        const missing = await memberIdsMissing(tx, added);
        if (missing.length > 0) return unknownMembers(missing);
        const renamed = next.displayName !== cur.displayName;
        if (
          !renamed && next.externalId === cur.externalId &&
          added.length === 0 && removed.length === 0
        ) {
          return await shownIn(tx, id);
        }
        // A rename may change the role of every member; otherwise only
        // those who join or leave are concerned.
        const concerned = renamed ? [...new Set([...have, ...added])] : [
          ...added,
          ...removed,
        ];
        const allowed = await owners.decide(tx, write, concerned, {
          groupId: id,
          displayName: next.displayName,
          members: [...after],
        });
        if (isRefusal(allowed)) return allowed;
        await owners.take(tx, write, allowed.takeOver);
        await tx`
          update scim_groups set display_name = ${next.displayName},
            external_id = ${next.externalId},
            modified_at = clock_timestamp(), version = version + 1
          where id = ${id}`;
        if (removed.length > 0) {
          await tx`
            delete from scim_members
            where group_id = ${id} and user_id = any(${removed}::int[])`;
        }
        if (added.length > 0) {
          await tx`
            insert into scim_members (group_id, user_id)
            select ${id}, unnest(${added}::int[])`;
        }
        await recordAudit(
          tx,
          scimEvents.group(
            "group.updated",
            { id, displayName: next.displayName },
            {
              ...renamed && { renamedFrom: cur.displayName },
              added: added.length,
              removed: removed.length,
            },
            write.connection,
            write.context,
          ),
        );
        await roles.apply(tx, write.connection.id, allowed.governed, write);
        return await shownIn(tx, id);
      }));
    },

    async remove(
      id: number,
      ifVersions: string[] | undefined,
      write: ScimWrite,
    ): Promise<ScimRemoved> {
      return await transaction(write.writeBy, async (tx) => {
        const [cur] = await tx<
          { id: number; displayName: string; version: string }[]
        >`
          select id, display_name as "displayName", version::text
          from scim_groups
          where id = ${id} and connection_id = ${write.connection.id}
          for update`;
        if (!cur) return refuse("not_found");
        if (ifVersions && !ifVersions.includes(cur.version)) {
          return refuse("precondition_failed");
        }
        const members = (await tx<{ id: number }[]>`
          select user_id as id from scim_members where group_id = ${id}`)
          .map((m) => m.id);
        const allowed = await owners.decide(tx, write, members, {
          groupId: id,
          displayName: cur.displayName,
          members: [],
        });
        if (isRefusal(allowed)) return allowed;
        await owners.take(tx, write, allowed.takeOver);
        await endGroupAssignments(tx, cur, null, write.context);
        await tx`delete from scim_groups where id = ${id}`;
        await recordAudit(
          tx,
          scimEvents.group(
            "group.deleted",
            cur,
            { removed: members.length },
            write.connection,
            write.context,
          ),
        );
        await roles.apply(tx, write.connection.id, allowed.governed, write);
        return "deleted";
      });
    },
  };
}
