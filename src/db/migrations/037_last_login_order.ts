import type { TransactionSql } from "postgres";
import { buildIndex } from "../migrate.ts";

/**
 * The users list by last sign-in (`sort=lastLoginAt`, src/db/user-order.ts).
 * Expand-only: one index, which a release without that order keeps up to
 * date and never reads.
 *
 * - `users_last_login`: `(last_login_at, id)`, read forwards and backwards;
 *   users who never signed in are its nulls, found by `is null` and in id
 *   order, so every page in either direction is an index range. A sign-in
 *   writes `last_login_at`, so it now also writes this index (a sign-in is
 *   a bcrypt comparison: the index's share is small).
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
    "users_last_login",
    "users (last_login_at, id)",
    context,
  );
}
