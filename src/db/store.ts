import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditContext,
  type AuditEvent,
  auditEvents,
} from "../audit/events.ts";
import type { Caller } from "../auth/caller.ts";
import {
  canonicalKey,
  lookalikeKey,
  lowerCaseKey,
} from "../users/canonical.ts";
import type { Account, Role, User } from "../users/user.ts";
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
 * their account or session is gone, or they are no longer an admin.
 */
export type CallerRefusal = "caller_gone" | "caller_not_admin";

export type LoginUser = Account & {
  passwordHash: string;
  /** Sessions are bound to it; it grows with every password change. */
  passwordVersion: number;
};

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
      and s.expires_at > now() and s.password_version = u.password_version`
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

  const sessions = {
    /**
     * A session bound to the password version the login checked; none (false)
     * when the password changed since, so a login that raced a reset fails.
     * The login's counter is cleared in the same transaction.
     */
    async create(
      tokenHash: Uint8Array,
      user: AuditParty & { passwordVersion: number },
      ttlSeconds: number,
      counter: LoginCounter,
      context: AuditContext,
      writeBy: WriteBy,
    ): Promise<boolean> {
      return await transaction(writeBy, async (tx) => {
        const rows = await tx`
          insert into sessions (token_hash, user_id, password_version, expires_at)
          select ${tokenHash}, id, password_version,
            now() + make_interval(secs => ${ttlSeconds})
          from users
          where id = ${user.id} and password_version = ${user.passwordVersion}
          returning 1`;
        if (rows.length !== 1) return false;
        // The insert may have waited for the user's row (a reset holding it).
        beforeWrite(writeBy);
        await clearLoginCounter(tx, counter);
        await recordAudit(tx, auditEvents.loginSucceeded(user, context));
        return true;
      });
    },

    /**
     * One round trip: the session, if unexpired and opened with the user's
     * current password, and its user's current row.
     */
    async resolve(tokenHash: Uint8Array): Promise<Account | undefined> {
      const [row] = await sql<Account[]>`
        select u.id, u.username, u.name, u.email, u.role
        from sessions s join users u on u.id = s.user_id
        where s.token_hash = ${tokenHash} and s.expires_at > now()
          and s.password_version = u.password_version`;
      return row;
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
