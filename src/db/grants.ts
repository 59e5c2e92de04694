import type { Sql, TransactionSql } from "postgres";

/**
 * The permissions the roles assigned to a user grant, as one expression
 * over the users row `alias` names (our own constant, never input): null
 * for an admin (who holds every one, and whose lookup reads no
 * assignment), else an array, empty for a plain viewer. Read inside the
 * session's and the key's lookup and the write's re-check, so resolving a
 * caller's permissions costs no round trip of its own, and a change is
 * seen by the next request on every instance (nothing is cached). Group
 * grants and reach will join here. One flat fragment, as account-state.ts
 * explains.
 */
export const grantedTo = (sql: Sql | TransactionSql, alias: string) =>
  sql.unsafe(`(case when ${alias}.role = 'admin' then null::text[] else array(
    select distinct p from role_assignments a
      join roles r on r.id = a.role_id
      cross join unnest(r.permissions) p
    where a.user_id = ${alias}.id) end)`);
