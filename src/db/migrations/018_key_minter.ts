import type { TransactionSql } from "postgres";
import { buildIndex } from "../migrate.ts";

/**
 * Who minted each API key (docs/security.md, "API keys"). Expand-only: one nullable column and an index, so a
 * release without them keeps working beside this one.
 *
 * - `api_keys.created_by`: the admin who minted the key. Null for every key
 *   made before this migration and for any a release without the column
 *   makes: such a key counts as minted by its owner. A key minted for
 *   another user is revoked when its minter is deleted, disabled or demoted
 *   (src/db/api-keys.ts); the foreign key's cascade removes it with a deleted
 *   minter even when a release without that rule deletes them.
 * - `api_keys_created_by`: the keys an admin minted, for that revocation
 *   and for the cascade.
 *
 * Outside a transaction, like 010, so the index is built without blocking
 * writes; every step can run again after a failure halfway.
 */
export const transaction = false;

export default async function (
  sql: TransactionSql,
  context: { inTransaction: boolean },
) {
  await sql`
    alter table api_keys add column if not exists created_by integer
      references users (id) on delete cascade`;
  await buildIndex(
    sql,
    "api_keys_created_by",
    "api_keys (created_by) where created_by is not null",
    context,
  );
}
