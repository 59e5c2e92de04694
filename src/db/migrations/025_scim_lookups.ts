import type { TransactionSql } from "postgres";
import { buildIndex } from "../migrate.ts";

/**
 * What an identity provider asks of a large directory, read from indexes
 * (src/db/scim-filter.ts, src/db/scim-list.ts). Expand-only: a function and
 * indexes, built without blocking writes, so a release without them keeps
 * working beside this one.
 *
 * - `scim_email_values(attributes)`: the lower-cased `emails[].value` a
 *   connection keeps for a user; `scim_user_links_emails` (GIN) finds the
 *   links holding an address, and `users_email_lower` the users whose own
 *   address it is: together they answer `emails.value eq` (asked before
 *   every create) without reading every user.
 * - `users_username_fold_c`: the canonical username in byte order, so
 *   `userName sw` (and `gt`/`ge`/`lt`/`le`, compared so) reads a range.
 *
 * Outside a transaction, like 010, so the indexes are built without
 * blocking writes; every step can run again after a failure halfway.
 */
export const transaction = false;

export default async function (
  sql: TransactionSql,
  context: { inTransaction: boolean },
) {
  await sql`
    create or replace function scim_email_values(attributes jsonb)
    returns text[] language sql immutable parallel safe as $$
      select coalesce(array_agg(lower(e->>'value')), '{}')
      from jsonb_array_elements(case
        when jsonb_typeof(attributes->'emails') = 'array'
        then attributes->'emails' else '[]' end) e
      where jsonb_typeof(e) = 'object'
    $$`;
  await buildIndex(
    sql,
    "scim_user_links_emails",
    "scim_user_links using gin (scim_email_values(attributes))",
    context,
  );
  await buildIndex(sql, "users_email_lower", "users (lower(email))", context);
  await buildIndex(
    sql,
    "users_username_fold_c",
    `users ((username_fold collate "C"))`,
    context,
  );
}
