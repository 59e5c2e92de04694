import type { Sql, TransactionSql } from "postgres";

/** Where a fragment is written: the pool or a transaction. */
type Q = Sql | TransactionSql;

/**
 * The one rule of whether a user is disabled now: `disabled_at` set and
 * `disabled_until` absent or still ahead (migration 016). After `until` the
 * user is active again by itself, before any sweep clears the columns. Every
 * lookup that lets a user in (sessions, logins, keys) and the list's
 * `status` filter use this fragment. Never null, so `not` negates it.
 *
 * `table` is the users row's name or alias in the query (our own text).
 */
export const disabledNow = (sql: Q, table = "users") => {
  const t = sql(table);
  return sql`(${t}.disabled_at is not null
    and (${t}.disabled_until is null or ${t}.disabled_until > now()))`;
};

/** A disable whose `until` has passed but whose columns are still set: a sweep or a login clears it. */
export const disableExpired = (sql: Q, table = "users") => {
  const t = sql(table);
  return sql`(${t}.disabled_at is not null and ${t}.disabled_until <= now())`;
};

/** Clears the columns of a disable (an enable, or one that ran out). */
export const disableCleared = (sql: Q) =>
  sql`disabled_at = null, disabled_reason = null,
    disabled_until = null`;

/**
 * A session that lets its user in: unexpired, opened with the user's current
 * password, its user not disabled. `s` and `u` name the sessions and users
 * rows in the query.
 */
export const liveSession = (sql: Q, s = "s", u = "u") => {
  const session = sql(s);
  return sql`(${session}.expires_at > now()
    and ${session}.password_version = ${sql(u)}.password_version
    and not ${disabledNow(sql, u)})`;
};

/**
 * An API key that lets its owner in: not revoked, not expired. `k` names
 * the api_keys row in the query (our own text).
 */
export const liveKey = (sql: Q, k = "k") =>
  sql.unsafe(
    `${k}.revoked_at is null and (${k}.expires_at is null or ${k}.expires_at > now())`,
  );
