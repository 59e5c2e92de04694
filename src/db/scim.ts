/**
 * Provisioning from identity providers (SCIM 2.0): connections
 * (scim-connections.ts), the users (scim-users.ts) and groups
 * (scim-groups.ts) they write, which users each may write
 * (scim-owners.ts) and the roles membership decides (scim-roles.ts). All
 * SQL of it; it knows no HTTP. Every SCIM write is one transaction, its
 * records (ordinary audit actions naming the connection) in it.
 */
import type { Sql, TransactionSql } from "postgres";
import type { Filter } from "scim2-parse-filter";
import { disabledNow, disableExpired } from "./account-state.ts";
import { createScimConnections } from "./scim-connections.ts";
import { compileFilter, GROUP_FILTER, USER_FILTER } from "./scim-filter.ts";
import {
  createGroupMembers,
  createScimGroups,
  groupShownOf,
} from "./scim-groups.ts";
import { createScimLists } from "./scim-list.ts";
import { createScimOwners } from "./scim-owners.ts";
import { createScimRoles } from "./scim-roles.ts";
import type { ScimUserRow, ScimWhere } from "./scim-types.ts";
import { createScimUsers } from "./scim-users.ts";
import { iso } from "./time.ts";
import type { Writer } from "./write.ts";
import { accountColumns, profileObject } from "./user-rows.ts";

export * from "./scim-types.ts";

/** The connections and everything they provision. */
export function createScimStore(sql: Sql, writer: Writer) {
  /** The account's profile (src/accounts/fields.ts), one object. */
  const profileOf = profileObject(sql, "u");
  /**
   * A user as a connection reads it; `u` the users row, `l` its link; with
   * the connection's groups the user is a member of (another connection's
   * stay unseen, as their groups do).
   */
  const userShown = (connectionId: number) =>
    sql`${accountColumns(sql, "u")},
    ${iso(sql, "u.created_at")} as created,
    ${iso(sql, "coalesce(u.modified_at, u.created_at)")} as modified,
    u.version::text as version, ${disableExpired(sql, "u")} as expired,
    not ${disabledNow(sql, "u")} as active,
    l.external_id as "externalId", coalesce(l.attributes, '{}') as attributes,
    ${profileOf}, (select coalesce(json_agg(json_build_object('value', g.id,
        'display', g.display_name) order by g.id), '[]')
      from scim_members m join scim_groups g on g.id = m.group_id
      where m.user_id = u.id and g.connection_id = ${connectionId}) as groups`;
  const userFrom = (connectionId: number) =>
    sql`users u left join scim_user_links l
      on l.user_id = u.id and l.connection_id = ${connectionId}`;

  const readUser = async (
    q: Sql | TransactionSql,
    connectionId: number,
    id: number,
    lock = false,
  ) => {
    const [row] = await q<ScimUserRow[]>`
      select ${userShown(connectionId)} from ${userFrom(connectionId)}
      where u.id = ${id} ${lock ? q`for update of u` : q``}`;
    return row;
  };

  const roles = createScimRoles(sql);
  const owners = createScimOwners(sql, roles);
  const users = createScimUsers(sql, writer, { owners, readUser });
  const groups = createScimGroups(sql, writer, { roles, owners });
  const lists = createScimLists(sql, {
    userShown,
    userFrom,
    groupShown: groupShownOf(sql),
    membersOf: createGroupMembers(sql),
  });

  return {
    /**
     * A parsed filter over users' or groups' rows as SQL; throws
     * its `invalidFilter` refusal. `across`: a filter of a search of both, in which the
     * other's attributes match nothing here.
     */
    filter: (kind: "users" | "groups", f: Filter, across = false): ScimWhere =>
      kind === "users"
        ? compileFilter(sql, USER_FILTER, f, across ? [GROUP_FILTER] : [])
        : compileFilter(sql, GROUP_FILTER, f, across ? [USER_FILTER] : []),

    connections: createScimConnections(sql, writer, roles),

    users: {
      get: (connectionId: number, id: number) =>
        readUser(sql, connectionId, id),
      ...lists.users,
      ...users,
    },

    groups: { ...groups, ...lists.groups },
  };
}

export type ScimStore = ReturnType<typeof createScimStore>;
