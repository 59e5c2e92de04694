import type { TransactionSql } from "postgres";
import { buildIndex } from "../migrate.ts";

/**
 * The users list by username walked from its index alone
 * (src/db/user-list.ts, `walk`: a page limited to a group's members).
 * Expand-only: one index, which a release without that walk keeps up to
 * date and never reads.
 *
 * - `users_username_fold_id`: `(username_fold, id)`. The unique index on
 *   `username_fold` (migration 011) orders the list but does not hold the
 *   id, so a walk of it read each user's row, and where its budget was a
 *   large share of the users the planner read the table and sorted it
 *   instead.
 *
 * Outside a transaction, like 018, so the index is built without blocking
 * writes; every step can run again after a failure halfway.
 */
export const transaction = false;

export default async function (
  sql: TransactionSql,
  context: { inTransaction: boolean },
) {
  await buildIndex(
    sql,
    "users_username_fold_id",
    "users (username_fold, id)",
    context,
  );
}
