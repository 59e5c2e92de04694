import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { type AuditEvent, auditEvents, NO_REQUEST } from "../audit/events.ts";
import {
  canonicalKey,
  lookalikeKey,
  lowerCaseKey,
} from "../users/canonical.ts";
import type { Account, Role, User, UserDetail } from "../users/user.ts";
import {
  disableCleared,
  disabledNow,
  disableExpired,
} from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import { recordMintedRevoked, revokeMinted } from "./keys.ts";
import { mfaSummaryOf } from "./mfa.ts";
import { clearLoginFailures } from "./throttle.ts";
import { createUserList, sameIdentity } from "./user-list.ts";
import {
  beforeWrite,
  type CallerRefusal,
  type CallerWrite,
  type WriteBy,
  type Writer,
} from "./write.ts";

export interface NewUser {
  username: string;
  name: string;
  email: string;
  role: Role;
  passwordHash: string;
}

export interface UserChange {
  role?: Role;
  passwordHash?: string;
}

export type LoginUser = Account & {
  passwordHash: string;
  /** Sessions are bound to it; it grows with every password change. */
  passwordVersion: number;
  /** Whether a login needs a second factor. */
  mfaEnabled: boolean;
  /** Disabled now (the login's write decides, under the row's lock). */
  disabled: boolean;
};

/** A disable as an admin asks for it. */
export interface DisableRequest {
  reason: string | null;
  /** ISO 8601, in the future; null: until enabled. */
  until: string | null;
}

/** A user's detail and its row's version, and whether a disable has run out unrecorded (see users.get). */
export interface FoundUser {
  user: UserDetail;
  version: string;
  /** A disable whose `until` passed but that no sweep or login has recorded yet. */
  expired: boolean;
}

/** A user's keys as the users table holds them (src/users/canonical.ts). */
export const identityKeys = (u: { username: string; email: string }) => ({
  username_key: lowerCaseKey(u.username),
  email_key: lowerCaseKey(u.email),
  username_fold: canonicalKey(u.username),
  email_fold: canonicalKey(u.email),
  username_skeleton: lookalikeKey(u.username),
  email_skeleton: lookalikeKey(u.email),
});

/** A row whose new keys an older release left unset, and what happened when they were computed. */
export type Rekeyed =
  | { id: number; outcome: "keyed" }
  | { id: number; outcome: "collision"; with: number[] };

const UNIQUE_VIOLATION = "23505";
const isUniqueViolation = (e: unknown) =>
  (e as { code?: string })?.code === UNIQUE_VIOLATION;

/** The write's outcome, or "duplicate" when it broke a unique key (and so rolled back). */
async function orDuplicate<T>(write: Promise<T>): Promise<T | "duplicate"> {
  try {
    return await write;
  } catch (e) {
    if (isUniqueViolation(e)) return "duplicate";
    throw e;
  }
}

/** A timestamp column (`table.column`) as the service shows times: ISO 8601 in UTC with milliseconds. */
export const iso = (sql: Sql, column: string) =>
  sql`to_char(${
    sql(column)
  } at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The users table: accounts, their roles, passwords and disables. */
export function createUsers(sql: Sql, { transaction, asCaller }: Writer) {
  // The one mapping from a users row to what the service shows.
  const account = sql`id, username, name, email, role`;
  const user = sql`${account},
    to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "createdAt"`;

  /** A new users row, every key included. */
  const newRow = (u: NewUser) =>
    sql({
      username: u.username,
      name: u.name,
      name_key: lowerCaseKey(u.name),
      email: u.email,
      role: u.role,
      password_hash: u.passwordHash,
      ...identityKeys(u),
    });

  /** One user as `GET /api/users/{id}` shows them (the list keeps `user`). */
  const detail = sql`${user},
    case when ${disabledNow(sql)} then json_build_object(
      'reason', users.disabled_reason,
      'until', ${iso(sql, "users.disabled_until")},
      'since', ${iso(sql, "users.disabled_at")}) end as disabled,
    ${iso(sql, "users.last_login_at")} as "lastLoginAt",
    ${mfaSummaryOf(sql)} as mfa`;
  /** What a detail read returns beside the detail (see FoundUser). */
  const detailMeta = sql`users.version::text as "version__",
    ${disableExpired(sql)} as "expired__"`;
  type DetailRow = UserDetail & { version__: string; expired__: boolean };
  const found = (row: DetailRow): FoundUser => {
    const { version__, expired__, ...shown } = row;
    return { user: shown, version: version__, expired: expired__ };
  };
  const cleared = disableCleared(sql);

  /** Inserts the user and, in the same transaction, `recorded`'s record of the new row. */
  const insertUser = async (
    tx: TransactionSql,
    u: NewUser,
    recorded: (row: User) => AuditEvent,
  ) => {
    const [row] = await tx<
      User[]
    >`insert into users ${newRow(u)} returning ${user}`;
    await recordAudit(tx, recorded(row));
    return row;
  };

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

  /** The user of that name (under the canonical key) made admin, or created as one. */
  const upsertAdmin = async (
    tx: TransactionSql,
    u: Omit<NewUser, "role">,
  ): Promise<"created" | "reset"> => {
    type Upserted = { id: number; username: string; created: boolean };
    const reset = sql`role = 'admin', password_hash = ${u.passwordHash},
      password_version = users.password_version + 1`;
    // A row an older release wrote has no canonical key yet: found by its lower-case one.
    const [existing] = await tx<Upserted[]>`
      update users set ${reset}
      where id = (select id from users
        where ${sameIdentity(sql, "username", u.username)}
        order by username_fold is null limit 1)
      returning id, username, false as created`;
    const [row] = existing ? [existing] : await tx<Upserted[]>`
      insert into users ${newRow({ ...u, role: "admin" })}
      on conflict (username_fold) do update set ${reset}
      returning id, username, (xmax = 0) as created`;
    await tx`delete from sessions where user_id = ${row.id}`;
    await clearLoginFailures(tx, row.id);
    const outcome = row.created ? "created" : "reset";
    await recordAudit(tx, auditEvents.adminRecovered(row, outcome));
    return outcome;
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

    /**
     * Disables the user (or changes the reason and end of a disable in
     * force, which keeps its `since`), ends all their sessions and revokes
     * the keys they minted for others (revokeMinted), in one transaction
     * that holds the user's row: a login waiting for it then finds the user
     * disabled (sessions.create). Their own keys are suspended, not
     * revoked. A disable that ran out unrecorded is recorded as
     * `user.enabled` first.
     */
    async disable(
      id: number,
      request: DisableRequest,
      write: CallerWrite,
    ): Promise<FoundUser | "not_found" | CallerRefusal> {
      return await asCaller(write, { update: id }, async (tx, actor) => {
        const [row] = await tx<(DetailRow & { ranOut: boolean })[]>`
          update users set
            disabled_at = case when ${disabledNow(sql)} then users.disabled_at
              else now() end,
            disabled_reason = ${request.reason}::text,
            disabled_until = ${request.until}::timestamptz
          from (select ${disableExpired(sql, "o")} as ran_out
            from users o where o.id = ${id}) old
          where users.id = ${id}
          returning ${detail}, ${detailMeta}, old.ran_out as "ranOut"`;
        if (!row) return "not_found";
        const { ranOut, ...rest } = row;
        const [minted] = await Promise.all([
          revokeMinted(tx, id),
          tx`delete from sessions where user_id = ${id}`,
        ]);
        if (ranOut) {
          await recordAudit(
            tx,
            auditEvents.userEnabled(null, rest, true, write.context),
          );
        }
        await recordAudit(
          tx,
          auditEvents.userDisabled(actor, rest, request, write.context),
        );
        await recordMintedRevoked(tx, minted, actor, write.context);
        return found(rest);
      });
    },

    /**
     * Lifts a disable (in force or run out); a user not disabled is
     * answered as is, unchanged. Recorded as `user.enabled`.
     */
    async enable(
      id: number,
      write: CallerWrite,
    ): Promise<FoundUser | "not_found" | CallerRefusal> {
      return await asCaller(write, { update: id }, async (tx, actor) => {
        const [row] = await tx<(DetailRow & { ranOut: boolean })[]>`
          update users set ${cleared}
          from (select ${disableExpired(sql, "o")} as ran_out
            from users o where o.id = ${id}) old
          where users.id = ${id} and users.disabled_at is not null
          returning ${detail}, ${detailMeta}, old.ran_out as "ranOut"`;
        if (!row) {
          const [same] = await tx<DetailRow[]>`
            select ${detail}, ${detailMeta} from users where id = ${id}`;
          return same ? found(same) : "not_found";
        }
        const { ranOut, ...rest } = row;
        await recordAudit(
          tx,
          ranOut
            ? auditEvents.userEnabled(null, rest, true, write.context)
            : auditEvents.userEnabled(actor, rest, false, write.context),
        );
        return found(rest);
      });
    },

    /**
     * Clears the disables whose `until` has passed (the users are active
     * already: disabledNow) and records each as `user.enabled`
     * `{expired: true}`; the housekeeping sweep calls it.
     */
    async recordExpiredDisables(writeBy: WriteBy): Promise<number> {
      return await transaction(writeBy, async (tx) => {
        const rows = await tx<AuditParty[]>`
          update users set ${cleared} where ${disableExpired(sql)}
          returning id, username`;
        for (const row of rows) {
          await recordAudit(
            tx,
            auditEvents.userEnabled(null, row, true, NO_REQUEST),
          );
        }
        return rows.length;
      });
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
     * The first admin, from the service itself: no caller to check; recorded
     * as `admin.bootstrapped` in the same transaction. A concurrent creation
     * of the same name (another instance) is "duplicate".
     */
    async createFirst(
      u: NewUser,
      source: "environment" | "generated",
      writeBy: WriteBy,
    ): Promise<User | "duplicate"> {
      return await orDuplicate(
        transaction(writeBy, (tx) =>
          insertUser(
            tx,
            u,
            (row) => auditEvents.adminBootstrapped(row, source),
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

    /**
     * Computes the keys of rows an older release inserted without them
     * (while a release rolls out), each row in its own statement. A row
     * whose key another user already holds keeps none: reported with that
     * user's ids, for an operator; it stays findable by its lower-case key.
     */
    async rekey(writeBy: WriteBy): Promise<Rekeyed[]> {
      const done: Rekeyed[] = [];
      let after = 0;
      for (;;) {
        beforeWrite(writeBy);
        const rows = await sql<
          { id: number; username: string; email: string }[]
        >`
          select id, username, email from users
          where id > ${after} and (username_fold is null or email_fold is null
            or username_skeleton is null or email_skeleton is null)
          order by id limit 500`;
        if (rows.length === 0) return done;
        for (const row of rows) {
          after = row.id;
          const keys = identityKeys(row);
          try {
            await sql`
              update users set username_fold = ${keys.username_fold},
                email_fold = ${keys.email_fold},
                username_skeleton = ${keys.username_skeleton},
                email_skeleton = ${keys.email_skeleton}
              where id = ${row.id}`;
            done.push({ id: row.id, outcome: "keyed" });
          } catch (e) {
            if (!isUniqueViolation(e)) throw e;
            const others = await sql<{ id: number }[]>`
              select id from users where id <> ${row.id} and (
                username_fold = ${keys.username_fold}
                or email_fold = ${keys.email_fold}
                or username_skeleton = ${keys.username_skeleton}
                or email_skeleton = ${keys.email_skeleton})
              order by id`;
            done.push({
              id: row.id,
              outcome: "collision",
              with: others.map((o) => o.id),
            });
          }
        }
      }
    },

    async count(): Promise<number> {
      const [{ n }] = await sql<
        { n: number }[]
      >`select count(*)::int as n from users`;
      return n;
    },

    /**
     * Creates the admin, or makes the existing user of that name an admin
     * with this password, ending their sessions and clearing their failed
     * logins like any password reset.
     */
    async upsertAdmin(
      u: Omit<NewUser, "role">,
      writeBy: WriteBy,
    ): Promise<"created" | "reset" | "duplicate"> {
      // "duplicate": another user has the e-mail, or a name that looks like this one.
      return await orDuplicate(
        transaction(writeBy, (tx) => upsertAdmin(tx, u)),
      );
    },
  };
}
