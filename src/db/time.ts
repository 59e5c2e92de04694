import type { Sql, TransactionSql } from "postgres";

/** How the service shows every time: ISO 8601 in UTC with milliseconds. */
const ISO_FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/**
 * A timestamp column as the service shows times, `2026-11-25T21:07:00.123Z`
 * (null stays null). `column` is our own constant (`created_at`,
 * `s.expires_at`), never input: the fragment is flat text, which the driver
 * puts together more cheaply than a nested identifier.
 */
export const iso = (sql: Sql | TransactionSql, column: string) =>
  sql.unsafe(`to_char(${column} at time zone 'UTC', ${ISO_FORMAT})`);

/**
 * A counting window of `seconds` that began at the row's
 * `window_started_at` (failed logins, wrong second factors): the interval
 * its expressions compare with, and whole seconds until it ends, at least
 * 1, as a 429's Retry-After says them.
 */
export function countingWindow(sql: Sql | TransactionSql, seconds: number) {
  const length = sql`make_interval(secs => ${seconds})`;
  return {
    length,
    retryAfter: sql`greatest(1, ceil(extract(epoch from
      window_started_at + ${length} - now())))::int`,
  };
}
