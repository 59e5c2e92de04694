import type { Sql, TransactionSql } from "postgres";
import { REACHABLE } from "../auth/permissions.ts";

/**
 * The permissions a limited assignment grants, as SQL text: our own
 * constant (permissions.ts), never input.
 */
const reachable = `'{${REACHABLE.join(",")}}'::text[]`;

/**
 * The permissions the roles assigned to a user grant, as one expression
 * over the users row `alias` names (our own constant, never input): null
 * for an admin (who holds every one, and whose lookup reads no
 * assignment), else an array, empty for a plain viewer. Each entry is a
 * permission over every user (`users:read`) or over the members of one
 * group (`users:read@12`, from an assignment with `reach_group_id`);
 * permissions.ts's `accessOf` reads them. A limited assignment grants only
 * the permissions that act on users (`REACHABLE`). Read inside the
 * session's and the key's lookup and the write's re-check, so resolving a
 * caller's permissions costs no round trip of its own, and a change is
 * seen by the next request on every instance (a session's lookup skips it
 * only while the grants' version it read holds: `grantsSeen`). A role
 * given to a group (`group_id`) is held by each of its members, read in
 * the same expression. One flat fragment, as account-state.ts explains;
 * its own aliases are none a caller's query names.
 */
export const grantedTo = (sql: Sql | TransactionSql, alias: string) =>
  sql.unsafe(`(case when ${alias}.role = 'admin' then null::text[] else array(
    select distinct case when held.reach is null then p
        else p || '@' || held.reach end from (
        select ra.role_id, ra.reach_group_id as reach from role_assignments ra
        where ra.user_id = ${alias}.id
        union all
        select ga.role_id, ga.reach_group_id from scim_members gm
          join role_assignments ga on ga.group_id = gm.group_id
        where gm.user_id = ${alias}.id
      ) held
      join roles r on r.id = held.role_id
      cross join unnest(r.permissions) p
      where held.reach is null or p = any(${reachable})) end)`);

/**
 * A key's own list as `accessOf` narrows by it, over the api_keys row
 * `alias` names (our own constant): its `permissions` (null: all of its
 * minter's), and for a key limited to a group's members (`reach_group_id`)
 * each of them over that group only (`users:read@12`), of the permissions
 * that act on users, as a limited assignment grants them (`REACHABLE`).
 * Intersected with the owner's and the minter's reach like any entry: the
 * one path every door's reach is read from (reach.ts). Read by the key's
 * lookup and the write's re-check alike.
 */
export const keyListed = (sql: Sql | TransactionSql, alias: string) =>
  sql.unsafe(`(case when ${alias}.reach_group_id is null
    then ${alias}.permissions else array(
      select p || '@' || ${alias}.reach_group_id
      from unnest(coalesce(${alias}.permissions, ${reachable})) p
      where p = any(${reachable})) end)`);

/** A session's grants as kept: what its roles granted at a version. */
export interface KeptGrants {
  version: string;
  granted: readonly string[];
}

/**
 * What the roles of each session's user granted, at a grants version
 * (migration 038), so a lookup that finds the version unchanged skips
 * resolving them (`grantedTo`, the larger part of a delegated person's
 * lookup). The version is read in the lookup's own statement and moves
 * with every change of assignments, memberships or roles' permissions, in
 * the changing transaction, so an unchanged version means unchanged
 * grants: a change is still seen by the next request on every instance.
 * Only the roles' grants are kept: whether the user is an admin, disabled
 * or signed in is read on every request. Bounded: past `max` sessions the
 * oldest kept goes.
 */
export function grantsSeen(max = 10_000) {
  const seen = new Map<string, KeptGrants>();
  const keyOf = (hash: Uint8Array) => String.fromCharCode(...hash);
  return {
    kept(hash: Uint8Array): KeptGrants | undefined {
      return seen.get(keyOf(hash));
    },
    keep(hash: Uint8Array, kept: KeptGrants): void {
      const key = keyOf(hash);
      seen.delete(key);
      if (seen.size >= max) seen.delete(seen.keys().next().value!);
      seen.set(key, kept);
    },
    /** Forgets a session that no longer resolves. */
    forget(hash: Uint8Array): void {
      seen.delete(keyOf(hash));
    },
  };
}
