import type { Sql, TransactionSql } from "postgres";

/** Where a fragment is written: the pool or a transaction. */
type Q = Sql | TransactionSql;

/**
 * The rules below are text with the row's name or alias in it (our own
 * constants, never input), each handed to the driver as one flat fragment
 * (`sql.unsafe`): a fragment built of nested fragments and identifiers is
 * put together again on every statement that holds it, a cost the session
 * lookup of every request shows.
 */
const disabledText = (t: string) =>
  `(${t}.disabled_at is not null
    and (${t}.disabled_until is null or ${t}.disabled_until > now()))`;

/**
 * The one rule of whether a user is disabled now: `disabled_at` set and
 * `disabled_until` absent or still ahead (migration 016). After `until` the
 * user is active again by itself, before any sweep clears the columns. Every
 * lookup that lets a user in (sessions, logins, keys) and the list's
 * `status` filter use this fragment. Never null, so `not` negates it.
 *
 * `table` is the users row's name or alias in the query.
 */
export const disabledNow = (sql: Q, table = "users") =>
  sql.unsafe(disabledText(table));

/** A disable whose `until` has passed but whose columns are still set: a sweep or a login clears it. */
export const disableExpired = (sql: Q, table = "users") =>
  sql.unsafe(
    `(${table}.disabled_at is not null and ${table}.disabled_until <= now())`,
  );

/** Clears the columns of a disable (an enable, or one that ran out). */
export const disableCleared = (sql: Q) =>
  sql`disabled_at = null, disabled_reason = null,
    disabled_until = null`;

/**
 * A session that lets its user in: unexpired, opened with the user's current
 * password, its user not disabled. `s` and `u` name the sessions and users
 * rows in the query.
 */
export const liveSession = (sql: Q, s = "s", u = "u") =>
  sql.unsafe(`(${s}.expires_at > now()
    and ${s}.password_version = ${u}.password_version
    and not ${disabledText(u)})`);

/** An API key that lets its owner in: not revoked, not expired. `k` names the api_keys row in the query. */
export const liveKey = (sql: Q, k = "k") =>
  sql.unsafe(
    `${k}.revoked_at is null and (${k}.expires_at is null or ${k}.expires_at > now())`,
  );
