/**
 * The users a connection writes: created (and so owned by it), replaced or
 * changed, deleted. Every write of an existing user asks the connection's
 * standing first (scim-owners.ts): a user managed elsewhere is refused and
 * nothing changes; a viewer it takes over is linked when the write goes on.
 */
import type { Sql, TransactionSql } from "postgres";
import { type AuditParty, canonicalJson } from "../audit/chain.ts";
import { auditEvents, byConnection, scimEvents } from "../audit/events.ts";
import { lowerCaseKey } from "../users/canonical.ts";
import { recordAudit } from "./audit.ts";
import type { ScimOwners } from "./scim-owners.ts";
import type { ScimRoles } from "./scim-roles.ts";
import {
  isFault,
  MANAGED_ELSEWHERE,
  orTaken,
  type ScimFault,
  type ScimRemoved,
  type ScimUserRow,
  type ScimUserState,
  type ScimWrite,
} from "./scim-types.ts";
import { clearLoginFailures } from "./throttle.ts";
import { identityKeys } from "./user-rows.ts";
import type { Writer } from "./write.ts";

/** A user as the connection reads it, its row locked when asked. */
export type ReadUser = (
  q: Sql | TransactionSql,
  connectionId: number,
  id: number,
  lock?: boolean,
) => Promise<ScimUserRow | undefined>;

export function createScimUsers(
  sql: Sql,
  { transaction }: Writer,
  { roles, owners, readUser }: {
    roles: ScimRoles;
    owners: ScimOwners;
    readUser: ReadUser;
  },
) {
  const { revokeFor } = roles;
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
    owner = false,
  ) =>
    tx`
      insert into scim_user_links (connection_id, user_id, external_id,
        attributes, owner)
      values (${connectionId}, ${userId}, ${s.externalId},
        ${sql.json(s.attributes as never)}, ${owner})
      on conflict (connection_id, user_id) do update
      set external_id = excluded.external_id, attributes = excluded.attributes`;

  return {
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
        await link(tx, connectionId, row.id, s, true);
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
      | ScimUserRow
      | ScimFault
      | "not_found"
      | typeof MANAGED_ELSEWHERE
      | "precondition_failed"
    > {
      const connectionId = write.connection.id;
      return await orTaken(transaction(write.writeBy, async (tx) => {
        const cur = await readUser(tx, connectionId, id, true);
        if (!cur) return "not_found" as const;
        const allowed = await owners.decide(tx, write, [id]);
        if (allowed === MANAGED_ELSEWHERE) return allowed;
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
        // A user taken over is linked by the first write that changes them.
        if (
          changed.length > 0 || next.passwordHash !== undefined ||
          cur.active !== next.active
        ) await owners.take(tx, write, allowed.takeOver);
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
    ): Promise<ScimRemoved> {
      return await transaction(write.writeBy, async (tx) => {
        const [cur] = await tx<(AuditParty & { version: string })[]>`
          select id, username, version::text from users where id = ${id}
          for update`;
        if (!cur) return "not_found";
        const allowed = await owners.decide(tx, write, [id]);
        if (allowed === MANAGED_ELSEWHERE) return allowed;
        if (ifVersions && !ifVersions.includes(cur.version)) {
          return "precondition_failed";
        }
        await owners.take(tx, write, allowed.takeOver);
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
  };
}
