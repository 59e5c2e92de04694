import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditContext,
  type AuditEvent,
  auditEvents,
  NO_REQUEST,
} from "../audit/events.ts";
import type { Caller } from "../auth/caller.ts";
import {
  canonicalKey,
  lookalikeKey,
  lowerCaseKey,
} from "../users/canonical.ts";
import type {
  Account,
  Role,
  SessionInfo,
  User,
  UserDetail,
} from "../users/user.ts";
import { disabledNow, disableExpired, liveSession } from "./account-state.ts";
import {
  audited,
  type AuditQuery,
  createAuditStore,
  createSealer,
  recordAudit,
} from "./audit.ts";
import { createKeyStore, liveKeyOwner } from "./keys.ts";
import { createIdempotencyStore } from "./idempotency.ts";
import { createUserList, sameIdentity } from "./user-list.ts";
import { createWebhookStore } from "./webhooks.ts";

/**
 * The `performance.now()` after which no write may begin: a request's
 * deadline less the time one statement may take, so what its client was
 * told failed is not applied later. Every write takes one.
 */
export type WriteBy = number;

/** For writes no client waits for: the bootstrap, the recovery task, housekeeping. */
export const NO_DEADLINE: WriteBy = Infinity;

/** A write attempted past its `WriteBy`: abandoned before it begins. */
export class WriteDeadlinePassed extends Error {
  constructor() {
    super("too little time left to write before the deadline");
  }
}

function beforeWrite(writeBy: WriteBy) {
  if (performance.now() > writeBy) throw new WriteDeadlinePassed();
}

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

/** A write on a caller's behalf, as a request asks for it. */
export interface CallerWrite {
  /** Re-checked inside the write's transaction. */
  caller: Caller;
  /** Request id and client address for the write's audit record. */
  context: AuditContext;
  writeBy: WriteBy;
}

/**
 * The caller lost the right to write since the request was authenticated:
 * their account or session is gone (or disabled), or they are no longer an
 * admin.
 */
export type CallerRefusal = "caller_gone" | "caller_not_admin";

export type LoginUser = Account & {
  passwordHash: string;
  /** Sessions are bound to it; it grows with every password change. */
  passwordVersion: number;
};

/** Where a login came from, kept with its session for an admin to see. */
export interface SessionOrigin {
  clientAddress: string | null;
  /** At most 256 characters (the caller cuts it). */
  userAgent: string | null;
}

/**
 * What a login's write made of a right password: a session, none because
 * the password changed since it was checked (`stale`), or none because the
 * user is disabled.
 */
export type SessionStart = "started" | "stale" | "disabled";

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

export interface LoginAttempt {
  blocked: boolean;
  /** Seconds until the window ends, when blocked. */
  retryAfter: number;
}

/**
 * Whose failed logins of a username an attempt counts: its client address's
 * (and, up to the ceiling, every address's), or a known device's alone.
 */
export type LoginCounter =
  & { usernameHash: Uint8Array }
  & ({ address: string; device?: never } | { device: string; address?: never });

/** The login_failures row that counts a username's failures from every address. */
const ALL_CLIENTS = "";

/** A known device's row in login_failures: no address holds a `v`. */
const deviceClient = (device: string) => `device:${device}`;

/** The rows an attempt counts on, in the order every writer locks them ('' first). */
const countedClients = (counter: LoginCounter) =>
  counter.device !== undefined
    ? [deviceClient(counter.device)]
    : [ALL_CLIENTS, counter.address];

const UNIQUE_VIOLATION = "23505";
const isUniqueViolation = (e: unknown) =>
  (e as { code?: string })?.code === UNIQUE_VIOLATION;

/**
 * Locks the caller's row (and the target's, in id order, so two admins
 * writing each other wait for one another instead of deadlocking), then
 * re-reads the caller's session (or API key) and role: a caller deleted,
 * logged out, reset or demoted, or whose key was revoked or expired, by a
 * write that committed meanwhile is refused.
 */
async function checkCaller(
  tx: TransactionSql,
  { caller, writeBy }: CallerWrite,
  lock: "share" | "update",
  targetId?: number,
): Promise<CallerRefusal | AuditParty> {
  const callerId = caller.account.id;
  const ids = [...new Set([callerId, targetId ?? callerId])];
  if (lock === "share") {
    await tx`select 1 from users where id = ${callerId} for share`;
  } else {
    await tx`
      select 1 from users where id = any(${ids}::int[]) order by id for update`;
  }
  const [row] = caller.keyId === undefined
    ? await tx<{ role: Role; username: string }[]>`
    select u.role, u.username from sessions s join users u on u.id = s.user_id
    where s.token_hash = ${caller.session} and u.id = ${callerId}
      and ${liveSession(tx)}`
    : await liveKeyOwner(tx, caller.keyId, callerId);
  if (!row) return "caller_gone";
  if (row.role !== "admin") return "caller_not_admin";
  beforeWrite(writeBy);
  return caller.keyId === undefined
    ? { id: callerId, username: row.username }
    : { id: callerId, username: row.username, keyId: caller.keyId };
}

const isRefusal = (
  outcome: CallerRefusal | AuditParty,
): outcome is CallerRefusal => typeof outcome === "string";

/**
 * Ends the failed-login windows of a user's name from every address and
 * every known device. Their key is the SHA-256 of the canonical username as
 * UTF-8, as the login computes it (auth.handlers.ts) from the same
 * canonicalKey; also the lower-case key's, which an older release counts
 * under while a release rolls out.
 */
async function clearLoginFailures(tx: TransactionSql, userId: number) {
  await tx`
    delete from login_failures f using users u
    where u.id = ${userId} and f.username_hash in (
      sha256(convert_to(u.username_fold, 'UTF8')),
      sha256(convert_to(u.username_key, 'UTF8')))`;
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

/**
 * A successful login's counters: a device's count is cleared; an address's
 * count is cleared and taken off the count over all addresses (the success
 * itself was counted as well). Rows are locked '' first, as attempts lock
 * them, so a success never deadlocks with an attempt of the same name.
 */
async function clearLoginCounter(tx: TransactionSql, counter: LoginCounter) {
  const { usernameHash } = counter;
  if (counter.device !== undefined) {
    await tx`
      delete from login_failures
      where username_hash = ${usernameHash} and client = ${
      deviceClient(counter.device)
    }`;
    return;
  }
  const { address } = counter;
  const rows = await tx<{ client: string; failures: number }[]>`
    select client, failures from login_failures
    where username_hash = ${usernameHash} and client in (${ALL_CLIENTS}, ${address})
    order by client for update`;
  const own = rows.find((r) => r.client === address)?.failures ?? 0;
  if (own === 0) return;
  // One statement: the delete and the update have exclusive conditions
  // (nothing left over all addresses, or some), so each row changes once.
  await tx`
    with cleared as (
      delete from login_failures
      where username_hash = ${usernameHash} and (client = ${address}
        or (client = ${ALL_CLIENTS} and failures <= ${own}))
    )
    update login_failures set failures = failures - ${own}
    where username_hash = ${usernameHash} and client = ${ALL_CLIENTS}
      and failures > ${own}`;
}

/**
 * Takes back the count a login attempt added (loginThrottle.attempt) when
 * its password was right but the account is disabled: that is no failed
 * attempt, and it clears no one's count either.
 */
async function takeBackAttempt(tx: TransactionSql, counter: LoginCounter) {
  await tx`
    update login_failures set failures = failures - 1
    where username_hash = ${counter.usernameHash}
      and client = any(${countedClients(counter)}::text[]) and failures > 0`;
}

/** A timestamp column (`table.column`) as the service shows times: ISO 8601 in UTC with milliseconds. */
const iso = (sql: Sql, column: string) =>
  sql`to_char(${
    sql(column)
  } at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * All SQL of the service. Functions take plain values and return rows or a
 * typed outcome, never HTTP. Every write takes its `WriteBy`, checked before
 * it begins (and, for a caller's write, again once its rows are locked).
 */
export function createStore(
  sql: Sql,
  {
    sealFailed = (cause: unknown) => {
      throw cause;
    },
  }: {
    /**
     * A seal that failed, after its writes committed: they stand, and their
     * records wait for the next seal. The service logs it; by default it is
     * thrown, uncaught when the seal ran on its own.
     */
    sealFailed?: (cause: unknown) => void;
  } = {},
) {
  const sealer = createSealer(sql, sealFailed);
  const auditStore = createAuditStore(sql);
  /**
   * A transaction that begins only while its deadline allows: checked
   * before it is queued, and again once it has a connection and BEGIN is
   * answered, so one that waited in the pool's queue (every connection
   * busy, or the database down and back) past its time rolls back before
   * its first statement. A write that may wait for a row checks once more
   * after that statement (checkCaller, sessions, the throttle). Not before
   * COMMIT: it would roll back more often after an outage, and a ROLLBACK
   * queued on a connection the server just closed makes postgres.js 3.4.9
   * throw outside any promise (tests/faults_test.ts).
   */
  const transaction = <T>(
    writeBy: WriteBy,
    body: (tx: TransactionSql) => Promise<T>,
  ): Promise<T> => {
    beforeWrite(writeBy);
    return audited(sql, sealer, (tx) => {
      beforeWrite(writeBy);
      return body(tx);
    });
  };

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
    ${iso(sql, "users.last_login_at")} as "lastLoginAt"`;
  /** What a detail read returns beside the detail (see FoundUser). */
  const detailMeta = sql`users.version::text as "version__",
    ${disableExpired(sql)} as "expired__"`;
  type DetailRow = UserDetail & { version__: string; expired__: boolean };
  const found = (row: DetailRow): FoundUser => {
    const { version__, expired__, ...shown } = row;
    return { user: shown, version: version__, expired: expired__ };
  };
  /** Clears the columns of a disable (an enable, or one that ran out). */
  const cleared = sql`disabled_at = null, disabled_reason = null,
    disabled_until = null`;

  const insertUser = (q: Sql | TransactionSql, u: NewUser) =>
    q<User[]>`insert into users ${newRow(u)} returning ${user}`;

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

  const users = {
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
     * force, which keeps its `since`) and ends all their sessions, in one
     * transaction that holds the user's row: a login waiting for it then
     * finds the user disabled (sessions.create). A disable that ran out
     * unrecorded is recorded as `user.enabled` first.
     */
    async disable(
      id: number,
      request: DisableRequest,
      write: CallerWrite,
    ): Promise<FoundUser | "not_found" | CallerRefusal> {
      return await transaction(write.writeBy, async (tx) => {
        const actor = await checkCaller(tx, write, "update", id);
        if (isRefusal(actor)) return actor;
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
        await tx`delete from sessions where user_id = ${id}`;
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
      return await transaction(write.writeBy, async (tx) => {
        const actor = await checkCaller(tx, write, "update", id);
        if (isRefusal(actor)) return actor;
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
      try {
        return await transaction(write.writeBy, async (tx) => {
          const actor = await checkCaller(tx, write, "share");
          if (isRefusal(actor)) return actor;
          const [row] = await insertUser(tx, u);
          await recordAudit(
            tx,
            auditEvents.userCreated(actor, row, write.context),
          );
          return row;
        });
      } catch (e) {
        if (isUniqueViolation(e)) return "duplicate";
        throw e;
      }
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
      try {
        return await transaction(writeBy, async (tx) => {
          const [row] = await insertUser(tx, u);
          await recordAudit(tx, auditEvents.adminBootstrapped(row, source));
          return row;
        });
      } catch (e) {
        if (isUniqueViolation(e)) return "duplicate";
        throw e;
      }
    },

    /**
     * A password change ends the user's sessions but the caller's own (which
     * is bound to the new password instead) and clears the username's failed
     * logins from every address, all in the write's transaction. With
     * `ifVersions` (If-Match) the row is written only when its version is one
     * of them, so of two writes expecting one version only the first
     * succeeds. A role change and a reset are each recorded in the trail.
     */
    async update(
      id: number,
      change: UserChange,
      write: CallerWrite,
      ifVersions?: string[],
    ): Promise<
      Account | "not_found" | "precondition_failed" | CallerRefusal
    > {
      return await transaction(write.writeBy, async (tx) => {
        const actor = await checkCaller(tx, write, "update", id);
        if (isRefusal(actor)) return actor;
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
        if (hash !== null) {
          await recordAudit(
            tx,
            auditEvents.passwordReset(actor, updated, write.context),
          );
        }
        return updated;
      });
    },

    /** Deleting a user ends their sessions (foreign key cascade). `ifVersions` as for update. */
    async remove(
      id: number,
      write: CallerWrite,
      ifVersions?: string[],
    ): Promise<
      "deleted" | "not_found" | "precondition_failed" | CallerRefusal
    > {
      return await transaction(write.writeBy, async (tx) => {
        const actor = await checkCaller(tx, write, "update", id);
        if (isRefusal(actor)) return actor;
        const [row] = await tx<AuditParty[]>`
          delete from users where id = ${id} and ${versionIn(ifVersions)}
          returning id, username`;
        if (!row) return await missing(tx, id, ifVersions);
        await recordAudit(
          tx,
          auditEvents.userDeleted(actor, row, write.context),
        );
        return "deleted";
      });
    },

    /** The account whose canonical username is this name's (which must hold no NUL: PostgreSQL text cannot). */
    async findForLogin(
      username: string,
    ): Promise<LoginUser | undefined> {
      const [row] = await sql<LoginUser[]>`
        select ${account}, password_hash as "passwordHash",
          password_version as "passwordVersion"
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
      try {
        return await transaction(writeBy, (tx) => upsertAdmin(tx, u));
      } catch (e) {
        // Another user has the e-mail, or a name that looks like this one.
        if (isUniqueViolation(e)) return "duplicate";
        throw e;
      }
    },
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

  /** A session (`s`) whose `last_seen_at` is due: never written, or over a minute ago. */
  const unseen = sql`(s.last_seen_at is null
    or s.last_seen_at <= now() - interval '1 minute')`;

  const sessions = {
    /**
     * A session for a login whose password was right, under the user's row
     * lock, so that it serialises with a password reset and a disable:
     * none when the password changed since it was checked (`stale`, a login
     * that raced a reset fails) or when the user is disabled (the attempt's
     * count is taken back and `login.refused` recorded; a disable that
     * commits after this session is made ends it). Otherwise the session is
     * bound to that password version, `last_login_at` written, a disable
     * that ran out recorded and cleared, and the login's counter cleared.
     */
    async create(
      tokenHash: Uint8Array,
      user: AuditParty & { passwordVersion: number },
      ttlSeconds: number,
      counter: LoginCounter,
      origin: SessionOrigin,
      context: AuditContext,
      writeBy: WriteBy,
    ): Promise<SessionStart> {
      return await transaction(writeBy, async (tx) => {
        const [row] = await tx<{ disabled: boolean; ranOut: boolean }[]>`
          select ${disabledNow(sql)} as disabled,
            ${disableExpired(sql)} as "ranOut"
          from users
          where id = ${user.id} and password_version = ${user.passwordVersion}
          for update`;
        if (!row) return "stale";
        // The lock may have been waited for (a reset or disable holding it).
        beforeWrite(writeBy);
        if (row.disabled) {
          await takeBackAttempt(tx, counter);
          await recordAudit(tx, auditEvents.loginRefused(user, context));
          return "disabled";
        }
        await tx`
          update users set last_login_at = now()${
          row.ranOut ? sql`, ${cleared}` : sql``
        }
          where id = ${user.id}`;
        await tx`
          insert into sessions (token_hash, user_id, password_version,
            expires_at, client_address, user_agent)
          values (${tokenHash}, ${user.id}, ${user.passwordVersion},
            now() + make_interval(secs => ${ttlSeconds}),
            ${origin.clientAddress}, ${origin.userAgent})`;
        await clearLoginCounter(tx, counter);
        if (row.ranOut) {
          await recordAudit(
            tx,
            auditEvents.userEnabled(null, user, true, context),
          );
        }
        await recordAudit(tx, auditEvents.loginSucceeded(user, context));
        return "started";
      });
    },

    /**
     * The session, if live (unexpired, opened with the user's current
     * password, the user not disabled), and its user's current row, in one
     * statement. When the session was last seen over a minute ago (or
     * never), a second statement notes it, under the same condition, so
     * that requests at the same moment write it once: at most one write a
     * minute per session, none on the other requests.
     */
    async resolve(tokenHash: Uint8Array): Promise<Account | undefined> {
      const [row] = await sql<(Account & { unseen: boolean })[]>`
        select u.id, u.username, u.name, u.email, u.role, ${unseen} as unseen
        from sessions s join users u on u.id = s.user_id
        where s.token_hash = ${tokenHash} and ${liveSession(sql)}`;
      if (!row) return undefined;
      const { unseen: due, ...account } = row;
      if (due) {
        await sql`
          update sessions s set last_seen_at = now()
          where s.token_hash = ${tokenHash} and ${unseen}`;
      }
      return account;
    },

    /**
     * The user's live sessions, newest first; undefined when no user has
     * this id. `current` marks the session of `callerSession` (token hash;
     * none for a caller with an API key).
     */
    async list(
      userId: number,
      callerSession: Uint8Array | undefined,
    ): Promise<SessionInfo[] | undefined> {
      const [exists] = await sql`select 1 from users where id = ${userId}`;
      if (!exists) return undefined;
      return await sql<SessionInfo[]>`
        select s.public_id::text as id,
          ${iso(sql, "s.created_at")} as "createdAt",
          ${iso(sql, "s.expires_at")} as "expiresAt",
          ${iso(sql, "s.last_seen_at")} as "lastSeenAt",
          s.client_address as "clientAddress", s.user_agent as "userAgent",
          coalesce(s.token_hash = ${callerSession ?? null}, false) as current
        from sessions s join users u on u.id = s.user_id
        where s.user_id = ${userId} and ${liveSession(sql)}
          and s.public_id is not null
        order by s.created_at desc, s.public_id`;
    },

    /**
     * Ends the user's sessions: all of them, or the one of this public id
     * (null: an id no session can have). Answers how many live ones ended
     * (rows that no longer let anyone in go too, uncounted); recorded as
     * `sessions.ended` `{count}` when any did.
     */
    async end(
      userId: number,
      publicId: string | null | "all",
      write: CallerWrite,
    ): Promise<number | "user_not_found" | CallerRefusal> {
      return await transaction(write.writeBy, async (tx) => {
        const actor = await checkCaller(tx, write, "update", userId);
        if (isRefusal(actor)) return actor;
        const [target] = await tx<AuditParty[]>`
          select id, username from users where id = ${userId}`;
        if (!target) return "user_not_found";
        if (publicId === null) return 0;
        const one = publicId === "all"
          ? sql``
          : sql`and s.public_id = ${publicId}::uuid`;
        const [{ count }] = await tx<{ count: number }[]>`
          with ended as (
            delete from sessions s using users u
            where u.id = s.user_id and s.user_id = ${userId} ${one}
            returning ${liveSession(sql)} as live)
          select count(*) filter (where live)::int as count from ended`;
        if (count > 0) {
          await recordAudit(
            tx,
            auditEvents.sessionsEnded(actor, target, count, write.context),
          );
        }
        return count;
      });
    },

    /** Ends a session; when there was one, records its user's `logout` in the same transaction. */
    async revoke(
      tokenHash: Uint8Array,
      context: AuditContext,
      writeBy: WriteBy,
    ) {
      await transaction(writeBy, async (tx) => {
        const [user] = await tx<AuditParty[]>`
          delete from sessions s using users u
          where s.token_hash = ${tokenHash} and u.id = s.user_id
          returning u.id, u.username`;
        if (!user) return;
        // The delete may have waited for the session's row.
        beforeWrite(writeBy);
        await recordAudit(tx, auditEvents.logout(user, context));
      });
    },

    async revokeExpired(writeBy: WriteBy): Promise<number> {
      beforeWrite(writeBy);
      const rows =
        await sql`delete from sessions where expires_at <= now() returning 1`;
      return rows.length;
    },
  };

  const loginThrottle = {
    /**
     * Counts this attempt before the password is checked (a success takes
     * it back, see sessions.create), under the rows' locks, so parallel
     * guesses cannot slip past the limit: for the username from this client
     * address and from all addresses, or from this known device alone.
     * Blocked once a row already holds its limit (`max`, or `ceiling` over
     * all addresses); Retry-After is the latest of their ends. A blocked
     * attempt counts nothing; the first of its window (per address or
     * device) writes `throttled(retryAfter)` in the same transaction, later
     * ones nothing: they only read, so a flood of them takes no lock and
     * writes no row (one statement each).
     */
    async attempt(
      counter: LoginCounter,
      limits: { max: number; ceiling: number; windowSeconds: number },
      throttled: (retryAfter: number) => AuditEvent,
      writeBy: WriteBy,
    ): Promise<LoginAttempt> {
      const { usernameHash } = counter;
      const clients = countedClients(counter);
      const window = sql`make_interval(secs => ${limits.windowSeconds})`;
      const limitOf = (client: string) =>
        client === ALL_CLIENTS ? limits.ceiling : limits.max;
      // Counts only grow inside a window, so a refusal read without a lock
      // stands (a success or reset clearing meanwhile at worst refuses this
      // one attempt too).
      const seen = await sql<
        {
          client: string;
          failures: number;
          retryAfter: number;
          recorded: boolean;
        }[]
      >`
        select client, failures, greatest(1, ceil(extract(epoch from
            window_started_at + ${window} - now())))::int as "retryAfter",
          throttled_window is not distinct from window_started_at as recorded
        from login_failures
        where username_hash = ${usernameHash} and client = any(${clients}::text[])
          and window_started_at > now() - ${window}`;
      const seenOver = seen.filter((r) => r.failures >= limitOf(r.client));
      const seenOwn = seen.find((r) => r.client !== ALL_CLIENTS);
      if (seenOver.length > 0 && seenOwn?.recorded) {
        return {
          blocked: true,
          retryAfter: Math.max(...seenOver.map((r) => r.retryAfter)),
        };
      }
      return await transaction(writeBy, async (tx) => {
        // Locks the rows in one order (no deadlock between attempts) and
        // starts a new window where the last one has ended.
        const rows = await tx<
          {
            client: string;
            failures: number;
            retryAfter: number;
            recorded: boolean;
          }[]
        >`
          insert into login_failures as f (username_hash, client, failures, window_started_at)
          select ${usernameHash}, client, 0, now()
          from unnest(${clients}::text[]) with ordinality as c(client, n) order by n
          on conflict (username_hash, client) do update set
            failures = case
              when f.window_started_at <= now() - ${window} then 0
              else f.failures end,
            window_started_at = case
              when f.window_started_at <= now() - ${window} then now()
              else f.window_started_at end
          returning client, failures, greatest(1, ceil(extract(epoch from
            window_started_at + ${window} - now())))::int as "retryAfter",
            throttled_window is not distinct from window_started_at as recorded`;
        // The rows' locks may have been waited for.
        beforeWrite(writeBy);
        const over = rows.filter((r) => r.failures >= limitOf(r.client));
        if (over.length === 0) {
          await tx`
            update login_failures set failures = failures + 1
            where username_hash = ${usernameHash} and client = any(${clients}::text[])`;
          return { blocked: false, retryAfter: 0 };
        }
        const retryAfter = Math.max(...over.map((r) => r.retryAfter));
        const own = rows.find((r) => r.client !== ALL_CLIENTS)!;
        if (!own.recorded) {
          await tx`
            update login_failures set throttled_window = window_started_at
            where username_hash = ${usernameHash} and client = ${own.client}`;
          await recordAudit(tx, throttled(retryAfter));
        }
        return { blocked: true, retryAfter };
      });
    },

    /** Drops counters whose window has ended: they no longer block anyone. */
    async forgetExpired(
      windowSeconds: number,
      writeBy: WriteBy,
    ): Promise<number> {
      beforeWrite(writeBy);
      const rows = await sql`
        delete from login_failures
        where window_started_at <= now() - make_interval(secs => ${windowSeconds})
        returning 1`;
      return rows.length;
    },
  };

  const deviceKey = {
    /** The key that signs the `did` cookie (migration 012). */
    async current(): Promise<Uint8Array> {
      const [row] = await sql<{ key: Uint8Array }[]>`
        select key from device_key where singleton`;
      if (!row) throw new Error("device_key holds no key");
      return row.key;
    },

    /** Replaces the key: every `did` signed with the old one stops counting. */
    async replace(key: Uint8Array, writeBy: WriteBy): Promise<void> {
      beforeWrite(writeBy);
      await sql`
        insert into device_key (singleton, key) values (true, ${key})
        on conflict (singleton) do update set key = excluded.key, created_at = now()`;
    },
  };

  return {
    users,
    sessions,
    loginThrottle,
    deviceKey,
    keys: createKeyStore(sql, { transaction, checkCaller }),
    idempotency: createIdempotencyStore(sql, beforeWrite),
    webhooks: createWebhookStore(sql, transaction, checkCaller),
    audit: {
      ...auditStore,
      /** As the trail's store lists, after sealing: every committed record is shown. */
      async list(q: AuditQuery) {
        await sealer.now();
        return await auditStore.list(q);
      },
      /**
       * Seals every record committed so far into the chain (by default a
       * write's records are sealed within moments, without waiting): before
       * the trail is read, and for records a failed seal or an ended
       * process left.
       */
      seal: sealer.now,
      /** Calls `listener` after each seal of this store that sealed records. */
      onSealed: sealer.onSealed,
      /** One record in a transaction of its own (see recordAudit). */
      record: (event: AuditEvent, writeBy: WriteBy) =>
        transaction(writeBy, (tx) => recordAudit(tx, event)),
    },
    async ping() {
      await sql`select 1`;
    },
    /** Seals what this store's writes left; call it before closing the pool. */
    stop: sealer.stop,
  };
}

export type Store = ReturnType<typeof createStore>;
