import type { TransactionSql } from "postgres";
import { buildIndex } from "../migrate.ts";

/**
 * Account lifecycle and sessions seen (docs/api.md, "Users (admins only)";
 * docs/security.md, "Sessions"). Expand-only: nullable columns, a column default and an index,
 * so a release without them keeps working beside this one.
 *
 * - `users.disabled_at`, `disabled_reason`, `disabled_until`: a disable in
 *   force while `disabled_at` is set and `disabled_until` is null or still
 *   ahead (src/db/account-state.ts holds the rule); `last_login_at`.
 * - `sessions.public_id`: a random id an admin sees and names a session by,
 *   never derived from the token. The default fills it for every new row,
 *   an older release's included; rows older than this migration get one
 *   here. `client_address`, `user_agent` (at most 256 characters) and
 *   `last_seen_at` (written at most once a minute) stay null for a session
 *   an older release opened, which works as before.
 * - `users_disabled_created_at_id`: the disabled users in list order, so
 *   `status=disabled` reads those rows only; `status=active` reads the
 *   list's own order and skips the few disabled.
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
    alter table users
      add column if not exists disabled_at timestamptz,
      add column if not exists disabled_reason text,
      add column if not exists disabled_until timestamptz,
      add column if not exists last_login_at timestamptz`;
  await sql`
    alter table sessions
      add column if not exists public_id uuid,
      add column if not exists client_address text,
      add column if not exists user_agent text,
      add column if not exists last_seen_at timestamptz`;
  // A default added apart from the column: no table rewrite.
  await sql`
    alter table sessions alter column public_id set default gen_random_uuid()`;
  await sql`
    update sessions set public_id = gen_random_uuid() where public_id is null`;
  await buildIndex(
    sql,
    "users_disabled_created_at_id",
    "users (created_at, id) where disabled_at is not null",
    context,
  );
}
