import type { Sql } from "postgres";
import {
  type AccountChange,
  acting,
  createAccountWrites,
  type NewAccount,
  recordAll,
} from "./account-writes.ts";
import type { User } from "../users/user.ts";
import type { Reach } from "../auth/permissions.ts";
import { inReach, reachedIds } from "./reach.ts";
import { disabledNow } from "./account-state.ts";
import { createUserList } from "./user-list.ts";
import { sameIdentity } from "./user-filter.ts";
import {
  type DetailRow,
  type FoundUser,
  type LoginUser,
  orDuplicate,
  userRows,
} from "./user-rows.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";
import { isRefusal, type Refusal, refuse } from "../refusal.ts";

/**
 * A caller's change of an account through the one write path
 * (account-writes.ts), if the caller may still write (asCaller), and the
 * user's detail after it: what every write of /api/users answers with.
 */
export function accountChanger(sql: Sql, asCaller: Writer["asCaller"]) {
  const accounts = createAccountWrites(sql);
  const { detail, detailMeta, found } = userRows(sql);
  return (
    id: number,
    change: AccountChange,
    write: CallerWrite,
    ifVersions?: string[],
  ) =>
    asCaller(write, { update: id }, async (tx, actor) => {
      const changed = await accounts.change(
        tx,
        id,
        change,
        acting(actor, write),
        ifVersions,
      );
      if (isRefusal(changed)) return changed;
      await recordAll(tx, changed.events);
      const [row] = await tx<DetailRow[]>`
        select ${detail}, ${detailMeta} from users where id = ${id}`;
      return found(row);
    });
}

/**
 * The users table as callers read and change accounts: the list, one
 * user's detail, a login's lookup, creations, role and password changes and
 * deletions. Disables are user-lifecycle.ts's; what the service itself
 * writes (the first admin, the recovery task, re-keying) user-service.ts's.
 */
export function createUsers(sql: Sql, { asCaller }: Pick<Writer, "asCaller">) {
  const { account, user, withState, detail, detailMeta, found } = userRows(
    sql,
  );
  const accounts = createAccountWrites(sql);
  const changeAndRead = accountChanger(sql, asCaller);

  const list = createUserList(sql, user, ",", withState);

  return {
    ...list,

    /**
     * The user's detail and the row's version, which changes with every
     * update; `expired` tells a disable that ran out by itself (the detail
     * shows none) from one still on the row. Outside `reach` (the
     * caller's, reach.ts) there is no such user.
     */
    async get(
      id: number,
      reach: Reach = "all",
    ): Promise<FoundUser | undefined> {
      const [row] = await sql<DetailRow[]>`
        select ${detail}, ${detailMeta} from users
        where id = ${id} and ${inReach(sql, reach)}`;
      return row && found(row);
    },

    /** The ids of the members of these groups (a limited reach's users, reach.ts). */
    async reachedIds(groupIds: readonly number[]): Promise<number[]> {
      const [{ ids }] = await sql<{ ids: number[] }[]>`
        select ${reachedIds(sql, groupIds)} as ids`;
      return ids;
    },

    /** Whether the user exists within `reach` (reach.ts). */
    async reached(id: number, reach: Reach): Promise<boolean> {
      const [row] = await sql`
        select 1 from users where id = ${id} and ${inReach(sql, reach)}`;
      return row !== undefined;
    },

    /** Creates the user if `caller` may still write (see `checkCaller`). */
    async create(
      u: NewAccount,
      write: CallerWrite,
    ): Promise<User | Refusal<"duplicate"> | CallerRefusal> {
      return await orDuplicate(
        asCaller(write, "share", async (tx, actor) => {
          const made = await accounts.create(tx, u, acting(actor, write));
          await recordAll(tx, made.events);
          return made.user;
        }),
      );
    },

    /**
     * Changes the account through the one write path (src/db/account-writes.ts),
     * if `caller` may still write: every consequence and record is its.
     * With `ifVersions` (If-Match) the row is written only when its version
     * is one of them, so of two writes expecting one version only the first
     * succeeds. A name or e-mail another user holds is refused as `duplicate`.
     */
    async update(
      id: number,
      change: AccountChange,
      write: CallerWrite,
      ifVersions?: string[],
    ): Promise<
      | FoundUser
      | Refusal<"not_found" | "precondition_failed" | "duplicate">
      | CallerRefusal
    > {
      return await orDuplicate(changeAndRead(id, change, write, ifVersions));
    },

    /**
     * Deleting a user ends their sessions and removes their keys (foreign
     * key cascade); the keys they minted for others are revoked and
     * recorded before the cascade removes them too. `ifVersions` as for
     * update.
     */
    async remove(
      id: number,
      write: CallerWrite,
      ifVersions?: string[],
    ): Promise<
      "deleted" | Refusal<"not_found" | "precondition_failed"> | CallerRefusal
    > {
      return await asCaller(write, { update: id }, async (tx, actor) => {
        const events = await accounts.remove(
          tx,
          id,
          acting(actor, write),
          ifVersions,
        );
        if (isRefusal(events)) return events;
        await recordAll(tx, events);
        return "deleted" as const;
      });
    },

    /** The account whose canonical username is this name's (which must hold no NUL: PostgreSQL text cannot). */
    async findForLogin(
      username: string,
    ): Promise<LoginUser | undefined> {
      const [row] = await sql<LoginUser[]>`
        select ${account}, password_hash as "passwordHash",
          password_version as "passwordVersion",
          mfa_enabled as "mfaEnabled", ${disabledNow(sql)} as disabled,
          exists (select 1 from sso_links l
            join sso_providers p on p.id = l.provider_id
            where l.user_id = users.id and not p.password_login)
            as "providerOnly"
        from users where ${sameIdentity(sql, "username", username)}
        order by username_fold is null limit 1`;
      return row;
    },

    /** The account's password hash, as the check of its own password change reads it. */
    async passwordHashOf(id: number): Promise<string | undefined> {
      const [row] = await sql<{ passwordHash: string }[]>`
        select password_hash as "passwordHash" from users where id = ${id}`;
      return row?.passwordHash;
    },

    /**
     * The caller's change of their own password, its current one proven:
     * through the one write path, which ends their other sessions, keeps
     * this one, clears their failed logins and records
     * `user.password_changed`.
     */
    async changeOwnPassword(
      passwordHash: string,
      write: CallerWrite,
    ): Promise<"changed" | CallerRefusal> {
      const id = write.caller.account.id;
      return await asCaller(write, { update: id }, async (tx, actor) => {
        const changed = await accounts.change(
          tx,
          id,
          { passwordHash, ownPassword: true },
          acting(actor, write),
        );
        // The caller's own row, locked and re-checked: gone only if deleted.
        if (isRefusal(changed)) return refuse("caller_gone");
        await recordAll(tx, changed.events);
        return "changed" as const;
      });
    },

    async count(): Promise<number> {
      const [{ n }] = await sql<
        { n: number }[]
      >`select count(*)::int as n from users`;
      return n;
    },
  };
}
