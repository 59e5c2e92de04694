import type { Sql, TransactionSql } from "postgres";
import type { Reach } from "../auth/permissions.ts";

/**
 * Reach in SQL: whom a permission held over some groups' members lets the
 * caller see and change (permissions.ts's `Reach`). Every door that reads
 * or writes a user by a caller's permission goes through these: the list,
 * the export, one user's detail, the audit trail, and the write's re-check
 * (write.ts's `checkCaller`, which reads `memberOf` under the user's lock).
 */

/** The groups the users row `alias` (our own constant) is a member of, as an int[] expression. */
export const memberOf = (sql: Sql | TransactionSql, alias: string) =>
  sql.unsafe(`array(select m.group_id from scim_members m
    where m.user_id = ${alias}.id)`);

/**
 * The condition "the user whose id is `column` (our own constant, e.g.
 * `users.id`) is within `reach`": true for everyone, else a member of one
 * of the groups (the membership's primary key, by group then user). A
 * null id (a record about no user) is within no limited reach.
 */
export const inReach = (
  sql: Sql | TransactionSql,
  reach: Reach,
  column = "users.id",
) =>
  reach === "all" ? sql`true` : sql`exists (select 1 from scim_members m
    where m.group_id = any(${reach.groupIds as number[]}::int[])
      and m.user_id = ${sql(column)})`;

/**
 * The ids of the users within a limited reach, as an int[] expression: what
 * a limited list is driven from (read from the membership by group, not by
 * a walk of every user).
 */
export const reachedIds = (
  sql: Sql | TransactionSql,
  groupIds: readonly number[],
) =>
  sql`array(select distinct m.user_id from scim_members m
    where m.group_id = any(${groupIds as number[]}::int[]))`;
