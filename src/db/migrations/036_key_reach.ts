import type { TransactionSql } from "postgres";
import { buildIndex } from "../migrate.ts";

/**
 * A key limited to a group's members (docs/delegation.md, "Keys").
 * Expand-only: one nullable column and an index, so a release without
 * them keeps working beside this one (it shows no limit, and its keys
 * carry none).
 *
 * - `api_keys.reach_group_id`: the group whose members alone the key acts
 *   on; null: every user its owner and minter reach. No foreign key: a
 *   group's deletion revokes the keys limited to it (src/db/groups.ts), and
 *   one a release without that rule deletes leaves them limited to a group
 *   with no members, reaching no one (an `on delete set null` would widen
 *   them to everyone, a cascade would erase them from the list of revoked
 *   keys). Group ids are never reused (an identity column).
 * - `api_keys_reach_group`: the keys limited to a group, for that
 *   revocation.
 *
 * Outside a transaction, like 018, so the index is built without blocking
 * writes; every step can run again after a failure halfway.
 */
export const transaction = false;

export default async function (
  sql: TransactionSql,
  context: { inTransaction: boolean },
) {
  await sql`
    alter table api_keys add column if not exists reach_group_id integer`;
  await buildIndex(
    sql,
    "api_keys_reach_group",
    "api_keys (reach_group_id) where reach_group_id is not null",
    context,
  );
}
