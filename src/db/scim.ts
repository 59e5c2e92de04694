/**
 * Provisioning from identity providers (SCIM 2.0): connections, the users
 * and groups they write, and the roles membership decides. All SQL of it;
 * it knows no HTTP. Every SCIM write is one transaction, its records
 * (ordinary audit actions naming the connection) in it.
 */
import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import { type AuditParty, canonicalJson } from "../audit/chain.ts";
import {
  type AuditContext,
  auditEvents,
  byConnection,
  type ConnectionRef,
  MINTER_REMOVED,
  scimEvents,
} from "../audit/events.ts";
import { lowerCaseKey } from "../users/canonical.ts";
import type { Role } from "../users/user.ts";
import { disabledNow, disableExpired } from "./account-state.ts";
import type { Filter } from "scim2-parse-filter";
import { recordAudit } from "./audit.ts";
import { compileFilter, GROUP_FILTER, USER_FILTER } from "./scim-filter.ts";
import { createScimLists } from "./scim-list.ts";
import { revokeMinted } from "./api-keys.ts";
import { iso } from "./time.ts";
import { clearLoginFailures } from "./throttle.ts";
import { identityKeys } from "./user-rows.ts";
import type { CallerRefusal, CallerWrite, WriteBy, Writer } from "./write.ts";

type Fragment = PendingQuery<Row[]>;

/** A compiled filter (scim-filter.ts), as the lists take it. */
export type ScimWhere = Fragment;

/** A provisioning connection as the API shows it: never its token. */
export interface Connection {
  id: number;
  name: string;
  adminGroups: string[];
  /** ISO 8601 in UTC with milliseconds. */
  createdAt: string;
}

/** A user as a connection reads it. */
export interface ScimUserRow {
  id: number;
  username: string;
  name: string;
  email: string;
  role: Role;
  created: string;
  modified: string;
  /** The row's version: the user's ETag with `expired` (src/users/listing.ts). */
  version: string;
  expired: boolean;
  active: boolean;
  externalId: string | null;
  /** The attributes the service has no column for, as the connection sent them. */
  attributes: Record<string, unknown>;
  /** The connection's groups the user is a member of, by id. */
  groups: { value: number; display: string }[];
}

/** What a SCIM write makes of a user. */
export interface ScimUserState {
  username: string;
  name: string;
  email: string;
  active: boolean;
  externalId: string | null;
  attributes: Record<string, unknown>;
  /** Set to change the password; a new user without one cannot log in with a password. */
  passwordHash?: string;
}

export interface ScimGroupRow {
  id: number;
  displayName: string;
  externalId: string | null;
  created: string;
  modified: string;
  version: string;
  /** Undefined when not asked for. */
  members?: { value: number; display: string }[];
}

export interface ScimGroupState {
  displayName: string;
  externalId: string | null;
  members: number[];
}

/** Why a SCIM write was refused, with the words its answer says. */
export interface ScimFault {
  fault:
    | "invalidValue"
    | "invalidFilter"
    | "invalidPath"
    | "noTarget"
    | "mutability"
    | "invalidSyntax"
    | "uniqueness";
  detail: string;
}

export const isFault = (x: unknown): x is ScimFault =>
  typeof x === "object" && x !== null && "fault" in x;

/** A written request: the connection, the request's context and its deadline. */
export interface ScimWrite {
  connection: ConnectionRef;
  context: AuditContext;
  writeBy: WriteBy;
}

const UNIQUE_VIOLATION = "23505";

/** The write's outcome, or the `uniqueness` fault of the unique key it broke (and so rolled back). */
async function orTaken<T>(write: Promise<T>): Promise<T | ScimFault> {
  try {
    return await write;
  } catch (e) {
    const err = e as { code?: string; constraint_name?: string };
    if (err?.code !== UNIQUE_VIOLATION) throw e;
    const constraint = err.constraint_name ?? "";
    return {
      fault: "uniqueness",
      detail: constraint.includes("external_id")
        ? "externalId is already taken in this connection"
        : constraint.includes("email")
        ? "the e-mail address is already taken"
        : "userName is already taken",
    };
  }
}

/** Attributes kept a user: at most this many bytes of JSON. */
export const ATTRIBUTES_MAX_BYTES = 16 * 1024;

/** The connections and everything they provision. */
export function createScimStore(sql: Sql, { transaction, asCaller }: Writer) {
  const connectionShown = sql`c.id, c.name, c.admin_groups as "adminGroups",
    ${iso(sql, "c.created_at")} as "createdAt"`;

  /**
   * A user as a connection reads it; `u` the users row, `l` its link; with
   * the connection's groups the user is a member of (another connection's
   * stay unseen, as their groups do).
   */
  const userShown = (connectionId: number) =>
    sql`u.id, u.username, u.name, u.email, u.role,
    ${iso(sql, "u.created_at")} as created,
    ${iso(sql, "coalesce(u.modified_at, u.created_at)")} as modified,
    u.version::text as version, ${disableExpired(sql, "u")} as expired,
    not ${disabledNow(sql, "u")} as active,
    l.external_id as "externalId", coalesce(l.attributes, '{}') as attributes,
    (select coalesce(json_agg(json_build_object('value', g.id,
        'display', g.display_name) order by g.id), '[]')
      from scim_members m join scim_groups g on g.id = m.group_id
      where m.user_id = u.id and g.connection_id = ${connectionId}) as groups`;
  const userFrom = (connectionId: number) =>
    sql`users u left join scim_user_links l
      on l.user_id = u.id and l.connection_id = ${connectionId}`;

  const groupShown = sql`g.id, g.display_name as "displayName",
    g.external_id as "externalId", ${iso(sql, "g.created_at")} as created,
    ${iso(sql, "g.modified_at")} as modified, g.version::text as version`;

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

  /**
   * Each user's role as membership decides it: `admin` in one of a
   * connection's adminGroups (display names without regard to case),
   * `viewer` otherwise (in no group at all too: groups govern them now).
   * Changes are recorded; a demoted admin's keys minted for others are
   * revoked, as every demotion does.
   */
  const applyRoles = async (
    tx: TransactionSql,
    userIds: number[],
    write: ScimWrite,
  ) => {
    if (userIds.length === 0) return;
    const changed = await tx<
      (AuditParty & { before: Role; role: Role })[]
    >`
      update users u set role = d.role
      from (
        select t.user_id, case when exists (
          select 1 from scim_members m
          join scim_groups g on g.id = m.group_id
          join scim_connections c on c.id = g.connection_id
          where m.user_id = t.user_id and exists (
            select 1 from unnest(c.admin_groups) a
            where lower(a) = lower(g.display_name)))
        then 'admin' else 'viewer' end as role
        from unnest(${userIds}::int[]) t(user_id)
      ) d, (select id, role as before from users
        where id = any(${userIds}::int[]) order by id for update) o
      where u.id = d.user_id and o.id = u.id and u.role <> d.role
      returning u.id, u.username, o.before, u.role`;
    for (const row of changed.toSorted((a, b) => a.id - b.id)) {
      await recordAudit(
        tx,
        byConnection(
          auditEvents.roleChanged(
            null,
            row,
            row.before,
            row.role,
            write.context,
          ),
          write.connection,
        ),
      );
      if (row.before === "admin") await revokeFor(tx, row.id, write);
    }
  };

  /** Revokes the keys a user minted for others, recorded as by the connection. */
  const revokeFor = async (
    tx: TransactionSql,
    userId: number,
    write: ScimWrite,
  ) => {
    for (const { owner, ...key } of await revokeMinted(tx, userId)) {
      await recordAudit(
        tx,
        byConnection(
          auditEvents.keyRevoked(
            null,
            owner,
            key,
            write.context,
            MINTER_REMOVED,
          ),
          write.connection,
        ),
      );
    }
  };

  /** Ends the user's sessions, suspends their keys (disabledNow) and disables them. */
  const disableUser = async (
    tx: TransactionSql,
    user: AuditParty,
    write: ScimWrite,
  ) => {
    const reason = `Deprovisioned by ${write.connection.name}`;
    await tx`
      update users set disabled_at = now(), disabled_reason = ${reason},
        disabled_until = null
      where id = ${user.id}`;
    await tx`delete from sessions where user_id = ${user.id}`;
    await recordAudit(
      tx,
      byConnection(
        auditEvents.userDisabled(null, user, { reason, until: null }, {
          ...write.context,
        }),
        write.connection,
      ),
    );
    await revokeFor(tx, user.id, write);
  };

  const enableUser = async (
    tx: TransactionSql,
    user: AuditParty,
    write: ScimWrite,
  ) => {
    await tx`
      update users set disabled_at = null, disabled_reason = null,
        disabled_until = null
      where id = ${user.id}`;
    await recordAudit(
      tx,
      byConnection(
        auditEvents.userEnabled(null, user, false, write.context),
        write.connection,
      ),
    );
  };

  const link = (
    tx: TransactionSql,
    connectionId: number,
    userId: number,
    s: Pick<ScimUserState, "externalId" | "attributes">,
  ) =>
    tx`
      insert into scim_user_links (connection_id, user_id, external_id,
        attributes)
      values (${connectionId}, ${userId}, ${s.externalId},
        ${sql.json(s.attributes as never)})
      on conflict (connection_id, user_id) do update
      set external_id = excluded.external_id, attributes = excluded.attributes`;

  const memberIdsMissing = async (tx: TransactionSql, ids: number[]) => {
    if (ids.length === 0) return [];
    const found = await tx<{ id: number }[]>`
      select id from users where id = any(${ids}::int[])`;
    const known = new Set(found.map((r) => r.id));
    return ids.filter((id) => !known.has(id));
  };

  const lists = createScimLists(sql, {
    userShown,
    userFrom,
    groupShown,
    membersOf,
  });

  return {
    /**
     * A parsed filter over users' or groups' rows as SQL; throws
     * FilterFault. `across`: a filter of a search of both, in which the
     * other's attributes match nothing here.
     */
    filter: (kind: "users" | "groups", f: Filter, across = false): ScimWhere =>
      kind === "users"
        ? compileFilter(sql, USER_FILTER, f, across ? [GROUP_FILTER] : [])
        : compileFilter(sql, GROUP_FILTER, f, across ? [USER_FILTER] : []),

    connections: {
      async create(
        c: { name: string; adminGroups: string[] },
        tokenHash: Uint8Array,
        write: CallerWrite,
      ): Promise<Connection | CallerRefusal> {
        return await asCaller(write, "share", async (tx, actor) => {
          const [row] = await tx<Connection[]>`
            insert into scim_connections as c (name, admin_groups, token_hash)
            values (${c.name}, ${c.adminGroups}::text[], ${tokenHash})
            returning ${connectionShown}`;
          await recordAudit(
            tx,
            scimEvents.connection(
              "connection.created",
              actor,
              row,
              write.context,
            ),
          );
          return row;
        });
      },

      async list(): Promise<Connection[]> {
        return await sql<Connection[]>`
          select ${connectionShown} from scim_connections c
          where c.revoked_at is null order by c.id`;
      },

      async get(id: number): Promise<Connection | undefined> {
        const [row] = await sql<Connection[]>`
          select ${connectionShown} from scim_connections c
          where c.id = ${id} and c.revoked_at is null`;
        return row;
      },

      /** The live connection a token's hash names: one indexed lookup. */
      async resolve(tokenHash: Uint8Array): Promise<Connection | undefined> {
        const [row] = await sql<Connection[]>`
          select ${connectionShown} from scim_connections c
          where c.token_hash = ${tokenHash} and c.revoked_at is null`;
        return row;
      },

      /**
       * Renames the connection or changes its adminGroups; a change of the
       * adminGroups applies the roles of its groups' members at once.
       */
      async update(
        id: number,
        change: { name?: string; adminGroups?: string[] },
        write: CallerWrite,
      ): Promise<Connection | "not_found" | CallerRefusal> {
        return await asCaller(write, "share", async (tx, actor) => {
          const [row] = await tx<Connection[]>`
            update scim_connections c set
              name = coalesce(${change.name ?? null}::text, name),
              admin_groups = coalesce(${change.adminGroups ?? null}::text[],
                admin_groups)
            where c.id = ${id} and c.revoked_at is null
            returning ${connectionShown}`;
          if (!row) return "not_found";
          if (change.adminGroups) {
            const members = await tx<{ id: number }[]>`
              select distinct m.user_id as id from scim_members m
              join scim_groups g on g.id = m.group_id
              where g.connection_id = ${id}`;
            await applyRoles(tx, members.map((m) => m.id), {
              connection: row,
              context: write.context,
              writeBy: write.writeBy,
            });
          }
          await recordAudit(
            tx,
            scimEvents.connection(
              "connection.updated",
              actor,
              row,
              write.context,
            ),
          );
          return row;
        });
      },

      /** Revokes the token at once; the connection's users and groups stay. */
      async remove(
        id: number,
        write: CallerWrite,
      ): Promise<"deleted" | "not_found" | CallerRefusal> {
        return await asCaller(write, "share", async (tx, actor) => {
          const [row] = await tx<Connection[]>`
            update scim_connections c set revoked_at = now()
            where c.id = ${id} and c.revoked_at is null
            returning ${connectionShown}`;
          if (!row) return "not_found";
          await recordAudit(
            tx,
            scimEvents.connection(
              "connection.deleted",
              actor,
              row,
              write.context,
            ),
          );
          return "deleted";
        });
      },
    },

    users: {
      get: (connectionId: number, id: number) =>
        readUser(sql, connectionId, id),

      ...lists.users,

      /** A new user (a viewer until membership says otherwise), linked to the connection. */
      async create(
        s: ScimUserState & { passwordHash: string },
        write: ScimWrite,
      ): Promise<ScimUserRow | ScimFault> {
        const connectionId = write.connection.id;
        return await orTaken(transaction(write.writeBy, async (tx) => {
          const [row] = await tx<AuditParty[]>`
            insert into users ${
            sql({
              username: s.username,
              name: s.name,
              name_key: lowerCaseKey(s.name),
              email: s.email,
              role: "viewer",
              password_hash: s.passwordHash,
              ...identityKeys(s),
            })
          } returning id, username`;
          await link(tx, connectionId, row.id, s);
          await recordAudit(
            tx,
            byConnection(
              auditEvents.userCreated(
                null,
                { ...row, role: "viewer" },
                write.context,
              ),
              write.connection,
            ),
          );
          if (!s.active) await disableUser(tx, row, write);
          return (await readUser(tx, connectionId, row.id))!;
        }));
      },

      /**
       * Replaces what the connection sees of the user with what `decide`
       * makes of it (a PUT's body, a PATCH's operations applied), in one
       * transaction holding the user's row: all of it or, on a fault, a
       * broken unique key or a stale If-Match, none of it.
       */
      async write(
        id: number,
        ifVersions: string[] | undefined,
        decide: (
          current: ScimUserRow,
        ) => Promise<ScimUserState | ScimFault>,
        write: ScimWrite,
      ): Promise<
        ScimUserRow | ScimFault | "not_found" | "precondition_failed"
      > {
        const connectionId = write.connection.id;
        return await orTaken(transaction(write.writeBy, async (tx) => {
          const cur = await readUser(tx, connectionId, id, true);
          if (!cur) return "not_found" as const;
          if (ifVersions && !ifVersions.includes(cur.version)) {
            return "precondition_failed" as const;
          }
          const next = await decide(cur);
          if (isFault(next)) return next;
          const changed: string[] = [];
          if (next.username !== cur.username) changed.push("userName");
          if (next.name !== cur.name) changed.push("name");
          if (next.email !== cur.email) changed.push("email");
          if (next.externalId !== cur.externalId) changed.push("externalId");
          // Compared whatever the order of their keys (jsonb keeps its own).
          if (
            canonicalJson(next.attributes) !== canonicalJson(cur.attributes)
          ) changed.push("attributes");
          const columns = changed.some((f) =>
            f === "userName" || f === "name" || f === "email"
          );
          if (columns) {
            await tx`
              update users set ${
              sql({
                username: next.username,
                name: next.name,
                name_key: lowerCaseKey(next.name),
                email: next.email,
                ...identityKeys(next),
              })
            } where id = ${id}`;
          } else if (changed.length > 0) {
            // What only the link holds changed: the row's version and
            // lastModified move, as the resource did.
            await tx`
              update users set modified_at = clock_timestamp()
              where id = ${id}`;
          }
          // Without a link the user reads as one without externalId and
          // attributes: one is made only when they change.
          if (
            changed.includes("externalId") || changed.includes("attributes")
          ) {
            await link(tx, connectionId, id, next);
          }
          const target = { id, username: next.username };
          if (changed.length > 0) {
            await recordAudit(
              tx,
              scimEvents.userUpdated(
                target,
                changed,
                write.connection,
                write.context,
              ),
            );
          }
          if (next.passwordHash !== undefined) {
            await tx`
              update users set password_hash = ${next.passwordHash},
                password_version = password_version + 1
              where id = ${id}`;
            await tx`delete from sessions where user_id = ${id}`;
            await clearLoginFailures(tx, id);
            await recordAudit(
              tx,
              byConnection(
                auditEvents.passwordReset(null, target, write.context),
                write.connection,
              ),
            );
          }
          if (cur.active && !next.active) await disableUser(tx, target, write);
          if (!cur.active && next.active) await enableUser(tx, target, write);
          return (await readUser(tx, connectionId, id))!;
        }));
      },

      /** Deletes the user: sessions and keys go with the row, groups leave them. */
      async remove(
        id: number,
        ifVersions: string[] | undefined,
        write: ScimWrite,
      ): Promise<"deleted" | "not_found" | "precondition_failed"> {
        return await transaction(write.writeBy, async (tx) => {
          const [cur] = await tx<(AuditParty & { version: string })[]>`
            select id, username, version::text from users where id = ${id}
            for update`;
          if (!cur) return "not_found";
          if (ifVersions && !ifVersions.includes(cur.version)) {
            return "precondition_failed";
          }
          await revokeFor(tx, id, write);
          await tx`delete from users where id = ${id}`;
          await recordAudit(
            tx,
            byConnection(
              auditEvents.userDeleted(null, cur, write.context),
              write.connection,
            ),
          );
          return "deleted";
        });
      },
    },

    groups: {
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

      ...lists.groups,

      async create(
        s: ScimGroupState,
        write: ScimWrite,
      ): Promise<ScimGroupRow | ScimFault> {
        return await orTaken(transaction(write.writeBy, async (tx) => {
          const members = [...new Set(s.members)];
          const missing = await memberIdsMissing(tx, members);
          if (missing.length > 0) return unknownMembers(missing);
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
          await applyRoles(tx, members, write);
          const [shown] = await tx<ScimGroupRow[]>`
            select ${groupShown} from scim_groups g where g.id = ${row.id}`;
          return shown;
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
        ) => ScimGroupState | ScimFault,
        write: ScimWrite,
      ): Promise<
        ScimGroupRow | ScimFault | "not_found" | "precondition_failed"
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
          if (!cur) return "not_found" as const;
          if (ifVersions && !ifVersions.includes(cur.version)) {
            return "precondition_failed" as const;
          }
          const have = (await tx<{ id: number }[]>`
            select user_id as id from scim_members where group_id = ${id}`)
            .map((r) => r.id);
          const next = decide({ ...cur, members: have });
          if (isFault(next)) return next;
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
            const [same] = await tx<ScimGroupRow[]>`
              select ${groupShown} from scim_groups g where g.id = ${id}`;
            return same;
          }
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
          await applyRoles(
            tx,
            renamed ? [...new Set([...have, ...added])] : [
              ...added,
              ...removed,
            ],
            write,
          );
          const [shown] = await tx<ScimGroupRow[]>`
            select ${groupShown} from scim_groups g where g.id = ${id}`;
          return shown;
        }));
      },

      async remove(
        id: number,
        ifVersions: string[] | undefined,
        write: ScimWrite,
      ): Promise<"deleted" | "not_found" | "precondition_failed"> {
        return await transaction(write.writeBy, async (tx) => {
          const [cur] = await tx<
            { id: number; displayName: string; version: string }[]
          >`
            select id, display_name as "displayName", version::text
            from scim_groups
            where id = ${id} and connection_id = ${write.connection.id}
            for update`;
          if (!cur) return "not_found";
          if (ifVersions && !ifVersions.includes(cur.version)) {
            return "precondition_failed";
          }
          const members = await tx<{ id: number }[]>`
            delete from scim_members where group_id = ${id}
            returning user_id as id`;
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
          await applyRoles(tx, members.map((m) => m.id), write);
          return "deleted";
        });
      },
    },
  };

  /** The members of these groups, with their usernames as `display`. */
  async function membersOf(groupIds: number[]) {
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
  }
}

const unknownMembers = (ids: number[]): ScimFault => ({
  fault: "invalidValue",
  detail: `no user has the id ${ids.slice(0, 5).join(", ")}${
    ids.length > 5 ? ", ..." : ""
  } (members)`,
});

export type ScimStore = ReturnType<typeof createScimStore>;
