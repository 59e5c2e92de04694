import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { auditEvents } from "../audit/events.ts";
import type { Account, Role, User } from "../users/user.ts";
import { disabledNow } from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import { recordMintedRevoked, revokeMinted } from "./api-keys.ts";
import { clearLoginFailures } from "./throttle.ts";
import { createUserList, sameIdentity } from "./user-list.ts";
import {
  type DetailRow,
  type FoundUser,
  type LoginUser,
  type NewUser,
  orDuplicate,
  type UserChange,
  userRows,
} from "./user-rows.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";

/**
 * The users table as callers read and change accounts: the list, one
 * user's detail, a login's lookup, creations, role and password changes and
 * deletions. Disables are user-lifecycle.ts's; what the service itself
 * writes (the first admin, the recovery task, re-keying) user-service.ts's.
 */
export function createUsers(sql: Sql, { asCaller }: Pick<Writer, "asCaller">) {
  const { account, user, detail, detailMeta, found, insertUser } = userRows(
    sql,
  );

  const list = createUserList(sql, user);

  /** The If-Match condition of a write: any version when none is expected. */
  const versionIn = (versions?: string[]) =>
    versions === undefined
      ? sql`true`
      : sql`version = any(${versions}::int8[])`;

  /** Why a conditional write touched no row: no such user, or another version. */
  const missing = async (
    tx: TransactionSql,
    id: number,
    versions?: string[],
  ) => {
    if (versions === undefined) return "not_found" as const;
    const [row] = await tx`select 1 from users where id = ${id}`;
    return row ? "precondition_failed" as const : "not_found" as const;
  };

  return {
    ...list,

    /**
     * The user's detail and the row's version, which changes with every
     * update; `expired` tells a disable that ran out by itself (the detail
     * shows none) from one still on the row.
     */
    async get(id: number): Promise<FoundUser | undefined> {
      const [row] = await sql<DetailRow[]>`
        select ${detail}, ${detailMeta} from users where id = ${id}`;
      return row && found(row);
    },

    /** Creates the user if `caller` may still write (see `checkCaller`). */
    async create(
      u: NewUser,
      write: CallerWrite,
    ): Promise<User | "duplicate" | CallerRefusal> {
      return await orDuplicate(
        asCaller(write, "share", (tx, actor) =>
          insertUser(
            tx,
            u,
            (row) => auditEvents.userCreated(actor, row, write.context),
          )),
      );
    },

    /**
     * A password change ends the user's sessions but the caller's own (which
     * is bound to the new password instead) and clears the username's failed
     * logins from every address, all in the write's transaction. With
     * `ifVersions` (If-Match) the row is written only when its version is one
     * of them, so of two writes expecting one version only the first
     * succeeds. A role change and a reset are each recorded in the trail.
     * A demotion from admin revokes the keys the user minted for others
     * (revokeMinted).
     */
    async update(
      id: number,
      change: UserChange,
      write: CallerWrite,
      ifVersions?: string[],
    ): Promise<
      Account | "not_found" | "precondition_failed" | CallerRefusal
    > {
      return await asCaller(write, { update: id }, async (tx, actor) => {
        const role = change.role ?? null;
        const hash = change.passwordHash ?? null;
        const [row] = await tx<
          (Account & { passwordVersion: number; before: Role })[]
        >`
          update users set
            role = coalesce(${role}::text, role),
            password_hash = coalesce(${hash}::text, password_hash),
            password_version = password_version +
              case when ${hash}::text is null then 0 else 1 end
          from (select role as before from users where id = ${id}) old
          where id = ${id} and ${versionIn(ifVersions)}
          returning ${account}, password_version as "passwordVersion", old.before`;
        if (!row) return await missing(tx, id, ifVersions);
        const { passwordVersion, before, ...updated } = row;
        const minted = before === "admin" && updated.role !== "admin"
          ? await revokeMinted(tx, id)
          : [];
        if (hash !== null) {
          // A key's caller has no session to keep; a reset leaves keys alone.
          const keep = write.caller.session ?? new Uint8Array();
          await tx`
            delete from sessions where user_id = ${id} and token_hash <> ${keep}`;
          await tx`
            update sessions set password_version = ${passwordVersion}
            where user_id = ${id} and token_hash = ${keep}`;
          await clearLoginFailures(tx, id);
        }
        // The records last, as in every write: sent with the COMMIT, they
        // cost the rows this write holds no extra round trip (recordAudit).
        if (role !== null && role !== before) {
          await recordAudit(
            tx,
            auditEvents.roleChanged(
              actor,
              updated,
              before,
              updated.role,
              write.context,
            ),
          );
        }
        await recordMintedRevoked(tx, minted, actor, write.context);
        if (hash !== null) {
          await recordAudit(
            tx,
            auditEvents.passwordReset(actor, updated, write.context),
          );
        }
        return updated;
      });
    },

    /**
     * Deleting a user ends their sessions and removes their keys (foreign
     * key cascade); the keys they minted for others are revoked and
     * recorded (revokeMinted) before the cascade removes them too.
     * `ifVersions` as for update.
     */
    async remove(
      id: number,
      write: CallerWrite,
      ifVersions?: string[],
    ): Promise<
      "deleted" | "not_found" | "precondition_failed" | CallerRefusal
    > {
      return await asCaller(write, { update: id }, async (tx, actor) => {
        // Both under the same condition, sent together: the revocation
        // reads the keys before the deletion's cascade removes them.
        const [minted, [row]] = await Promise.all([
          revokeMinted(tx, id, versionIn(ifVersions)),
          tx<AuditParty[]>`
            delete from users where id = ${id} and ${versionIn(ifVersions)}
            returning id, username`,
        ]);
        if (!row) return await missing(tx, id, ifVersions);
        await recordAudit(
          tx,
          auditEvents.userDeleted(actor, row, write.context),
        );
        await recordMintedRevoked(tx, minted, actor, write.context);
        return "deleted";
      });
    },

    /** The account whose canonical username is this name's (which must hold no NUL: PostgreSQL text cannot). */
    async findForLogin(
      username: string,
    ): Promise<LoginUser | undefined> {
      const [row] = await sql<LoginUser[]>`
        select ${account}, password_hash as "passwordHash",
          password_version as "passwordVersion",
          mfa_enabled as "mfaEnabled", ${disabledNow(sql)} as disabled
        from users where ${sameIdentity(sql, "username", username)}
        order by username_fold is null limit 1`;
      return row;
    },

    async count(): Promise<number> {
      const [{ n }] = await sql<
        { n: number }[]
      >`select count(*)::int as n from users`;
      return n;
    },
  };
}
