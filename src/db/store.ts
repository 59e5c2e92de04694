import type { Sql, TransactionSql } from "postgres";
import { type AuditContext, auditEvents } from "../audit/events.ts";
import { canonicalKey } from "../users/canonical.ts";
import { createAuditStore, recordAudit } from "./audit.ts";
import type { Account, Role, User } from "../users/user.ts";
import { createUserList } from "./user-list.ts";

/** The caller, as a session resolves to them. */
export type SessionUser = Account;

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
  /** Session kept when the password changes: the caller's own. */
  keepSession?: Uint8Array;
}

export interface LoginAttempt {
  blocked: boolean;
  /** Seconds until the window ends, when blocked. */
  retryAfter: number;
}

const UNIQUE_VIOLATION = "23505";
const isUniqueViolation = (e: unknown) =>
  (e as { code?: string })?.code === UNIQUE_VIOLATION;

/**
 * All SQL of the service. Functions take plain values and return rows or a
 * typed outcome, never HTTP.
 */
export function createStore(sql: Sql) {
  // The one mapping from a users row to what the service shows.
  const account = sql`id, username, name, email, role`;
  const user = sql`${account},
    to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "createdAt"`;

  const insertUser = async (q: Sql | TransactionSql, u: NewUser) => {
    const [row] = await q<User[]>`
      insert into users (username, username_key, name, name_key, email, email_key, role, password_hash)
      values (${u.username}, ${canonicalKey(u.username)},
        ${u.name}, ${canonicalKey(u.name)},
        ${u.email}, ${canonicalKey(u.email)}, ${u.role}, ${u.passwordHash})
      returning ${user}`;
    return row;
  };

  const list = createUserList(sql, user);

  /** The If-Match condition of a write: any version when none is expected. */
  const versionIn = (versions?: string[]) =>
    versions === undefined
      ? sql`true`
      : sql`version = any(${versions}::int8[])`;

  /** Why a conditional write touched no row: no such user, or another version. */
  const missing = async (id: number, versions?: string[]) => {
    if (versions === undefined) return "not_found" as const;
    const [row] = await sql`select 1 from users where id = ${id}`;
    return row ? "precondition_failed" as const : "not_found" as const;
  };

  const users = {
    ...list,

    /** The user and the row's version, which changes with every update. */
    async get(
      id: number,
    ): Promise<{ user: User; version: string } | undefined> {
      const [row] = await sql<(User & { version: string })[]>`
        select ${user}, version::text from users where id = ${id}`;
      if (!row) return undefined;
      const { version, ...shown } = row;
      return { user: shown, version };
    },

    async create(u: NewUser): Promise<User | "duplicate"> {
      try {
        return await insertUser(sql, u);
      } catch (e) {
        if (isUniqueViolation(e)) return "duplicate";
        throw e;
      }
    },

    /**
     * The first admin at startup, recorded as `admin.bootstrapped` in the
     * same transaction: created with its record, or neither.
     */
    async createFirstAdmin(
      u: NewUser,
      source: "environment" | "generated",
    ): Promise<User | "duplicate"> {
      try {
        return await sql.begin(async (tx) => {
          const row = await insertUser(tx, u);
          await recordAudit(tx, auditEvents.adminBootstrapped(row, source));
          return row;
        });
      } catch (e) {
        if (isUniqueViolation(e)) return "duplicate";
        throw e;
      }
    },

    /**
     * A password change also ends the user's other sessions, in the same
     * statement. With `ifVersions` (If-Match), the row is written only when
     * its version is one of them, checked by the write itself, so of two
     * writes expecting one version only the first succeeds.
     */
    async update(
      id: number,
      change: UserChange,
      ifVersions?: string[],
    ): Promise<Account | "not_found" | "precondition_failed"> {
      const role = change.role ?? null;
      const hash = change.passwordHash ?? null;
      const keep = change.keepSession ?? new Uint8Array();
      const [row] = await sql<Account[]>`
        with updated as (
          update users set
            role = coalesce(${role}::text, role),
            password_hash = coalesce(${hash}::text, password_hash)
          where id = ${id} and ${versionIn(ifVersions)}
          returning ${account}
        ), revoked as (
          delete from sessions
          where ${hash}::text is not null
            and user_id = (select id from updated)
            and token_hash <> ${keep}
        )
        select * from updated`;
      return row ?? await missing(id, ifVersions);
    },

    /** Deleting a user ends their sessions (foreign key cascade). `ifVersions` as for update. */
    async remove(
      id: number,
      ifVersions?: string[],
    ): Promise<"deleted" | "not_found" | "precondition_failed"> {
      const rows = await sql`
        delete from users where id = ${id} and ${versionIn(ifVersions)}
        returning id`;
      return rows.length ? "deleted" : await missing(id, ifVersions);
    },

    async findForLogin(
      username: string,
    ): Promise<(Account & { passwordHash: string }) | undefined> {
      // No stored name holds U+0000 (PostgreSQL text cannot), and the query would fail on it.
      if (username.includes("\u0000")) return undefined;
      const [row] = await sql<(Account & { passwordHash: string })[]>`
        select ${account}, password_hash as "passwordHash"
        from users where username_key = ${canonicalKey(username)}`;
      return row;
    },

    async count(): Promise<number> {
      const [{ n }] = await sql<
        { n: number }[]
      >`select count(*)::int as n from users`;
      return n;
    },

    /**
     * Creates the admin, or makes the existing user of that name an admin
     * with this password, ending their sessions like any password reset.
     */
    async upsertAdmin(u: Omit<NewUser, "role">): Promise<"created" | "reset"> {
      return await sql.begin(async (tx) => {
        const [row] = await tx<
          { id: number; username: string; created: boolean }[]
        >`
        with upserted as (
          insert into users (username, username_key, name, name_key, email, email_key, role, password_hash)
          values (${u.username}, ${canonicalKey(u.username)},
            ${u.name}, ${canonicalKey(u.name)},
            ${u.email}, ${canonicalKey(u.email)}, 'admin', ${u.passwordHash})
          on conflict (username_key) do update
            set role = 'admin', password_hash = excluded.password_hash
          returning id, username, (xmax = 0) as created
        ), revoked as (
          delete from sessions
          where user_id = (select id from upserted where not created)
        )
        select id, username, created from upserted`;
        const outcome = row.created ? "created" : "reset";
        await recordAudit(tx, auditEvents.adminRecovered(row, outcome));
        return outcome;
      });
    },
  };

  const sessions = {
    async create(tokenHash: Uint8Array, userId: number, ttlSeconds: number) {
      await sql`
        insert into sessions (token_hash, user_id, expires_at)
        values (${tokenHash}, ${userId}, now() + make_interval(secs => ${ttlSeconds}))`;
    },

    /** One round trip: the session, if unexpired, and its user's current row. */
    async resolve(tokenHash: Uint8Array): Promise<SessionUser | undefined> {
      const [row] = await sql<SessionUser[]>`
        select u.id, u.username, u.name, u.email, u.role
        from sessions s join users u on u.id = s.user_id
        where s.token_hash = ${tokenHash} and s.expires_at > now()`;
      return row;
    },

    /** Ends a session; when there was one, records its user's `logout` in the same transaction. */
    async revoke(tokenHash: Uint8Array, context: AuditContext) {
      await sql.begin(async (tx) => {
        const [user] = await tx<{ id: number; username: string }[]>`
          delete from sessions s using users u
          where s.token_hash = ${tokenHash} and u.id = s.user_id
          returning u.id, u.username`;
        if (user) await recordAudit(tx, auditEvents.logout(user, context));
      });
    },

    async revokeExpired(): Promise<number> {
      const rows =
        await sql`delete from sessions where expires_at <= now() returning 1`;
      return rows.length;
    },
  };

  const loginThrottle = {
    /**
     * Counts this attempt before the password is checked, atomically, so
     * parallel guesses cannot slip past the limit; a success clears it.
     * Blocked once the fixed window already holds `max` failures.
     */
    async attempt(
      usernameHash: Uint8Array,
      max: number,
      windowSeconds: number,
    ): Promise<LoginAttempt> {
      const [row] = await sql<{ failures: number; retryAfter: number }[]>`
        insert into login_failures as f (username_hash, failures, window_started_at)
        values (${usernameHash}, 1, now())
        on conflict (username_hash) do update set
          failures = case
            when f.window_started_at <= now() - make_interval(secs => ${windowSeconds}) then 1
            else f.failures + 1 end,
          window_started_at = case
            when f.window_started_at <= now() - make_interval(secs => ${windowSeconds}) then now()
            else f.window_started_at end
        returning failures, greatest(1, ceil(extract(epoch from
          window_started_at + make_interval(secs => ${windowSeconds}) - now())))::int as "retryAfter"`;
      return { blocked: row.failures > max, retryAfter: row.retryAfter };
    },

    async clear(usernameHash: Uint8Array) {
      await sql`delete from login_failures where username_hash = ${usernameHash}`;
    },

    /** Drops counters whose window has ended: they no longer block anyone. */
    async forgetExpired(windowSeconds: number): Promise<number> {
      const rows = await sql`
        delete from login_failures
        where window_started_at <= now() - make_interval(secs => ${windowSeconds})
        returning 1`;
      return rows.length;
    },
  };

  return {
    users,
    sessions,
    loginThrottle,
    audit: createAuditStore(sql),
    async ping() {
      await sql`select 1`;
    },
  };
}

export type Store = ReturnType<typeof createStore>;
