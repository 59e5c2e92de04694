import type { TransactionSql } from "postgres";
import { buildIndex } from "../migrate.ts";

/**
 * Indexes that answer each filter of the users list in the list's order,
 * built without blocking writes: a filter then reads the rows it returns
 * and no others, however many users there are.
 *
 * - `role`: the list is ordered by (created_at, id), and without this index
 *   a role held by a few users among many was found by reading every row
 *   (a sequential scan, or the list's order with a filter, which PostgreSQL
 *   chose for a prepared statement's generic plan). With it, the role's
 *   users are read in list order, a cursor's place included.
 *
 * The audit trail's filters (`action`, `actorId`, `targetId`, each ordered
 * by id) have theirs since migration 005.
 *
 * Outside a transaction (CREATE INDEX CONCURRENTLY refuses one), one
 * instance at a time (src/db/migrate.ts); behind transaction pooling, in
 * the migration transaction with a plain build. The embedded database
 * builds them concurrently too: PGlite runs CONCURRENTLY as PostgreSQL
 * does, with no other session to wait for.
 */
export const transaction = false;

export default async function (
  sql: TransactionSql,
  context: { inTransaction: boolean },
) {
  await buildIndex(
    sql,
    "users_role_created_at_id",
    "users (role, created_at, id)",
    context,
  );
}
