import type { PendingQuery, Row, Sql } from "postgres";
import { canonicalKey, lowerCaseKey } from "../users/canonical.ts";
import type { Role } from "../users/user.ts";
import type { Reach } from "../auth/permissions.ts";
import { disabledNow } from "./account-state.ts";
import { reachedIds } from "./reach.ts";

/** A list's items: the user (the contract's), or with their state (`include=state`). */
export type ListShape = "user" | "state";

/** Which users a list holds; every field given must hold (AND). */
export interface UserFilter {
  role?: Role;
  /** Disabled now, or not (src/db/account-state.ts). */
  status?: "active" | "disabled";
  /** Contained in the lower-case form of username, name or e-mail. */
  q?: string;
  /** Exact, under the canonical key. */
  username?: string;
  /** Exact, under the canonical key. */
  email?: string;
  /** Only these users (an export of a selection). */
  ids?: number[];
  /** Whom the caller reaches (reach.ts); absent: everyone. */
  reach?: Reach;
}

/**
 * The condition "the user's username (or e-mail) is this value under the
 * canonical key": `*_fold`, or, in a row an older release wrote whose new
 * keys are not computed yet, the lower-case key it did write.
 */
export function sameIdentity(
  sql: Sql,
  field: "username" | "email",
  value: string,
) {
  const fold = sql(`${field}_fold`);
  const lower = sql(`${field}_key`);
  return sql`(users.${fold} = ${canonicalKey(value)}
    or (users.${fold} is null and users.${lower} = ${lowerCaseKey(value)}))`;
}

/** The `where` clause of the users `filter` matches, and `place` (a list's part) too. */
export function whereOf(
  sql: Sql,
  filter: UserFilter,
  place?: PendingQuery<Row[]>,
) {
  const conditions = [];
  // A limited reach is read from the membership, by group (reach.ts):
  // the users it names, not a walk of every user.
  if (filter.reach && filter.reach !== "all") {
    conditions.push(
      sql`users.id = any(${reachedIds(sql, filter.reach.groupIds)})`,
    );
  }
  if (filter.role) conditions.push(sql`users.role = ${filter.role}`);
  // `disabled` reads the index of disabled users in list order (migration
  // 016); `active` the list's own order, skipping the few disabled.
  if (filter.status === "disabled") conditions.push(disabledNow(sql));
  if (filter.status === "active") {
    conditions.push(sql`not ${disabledNow(sql)}`);
  }
  if (filter.username !== undefined) {
    conditions.push(sameIdentity(sql, "username", filter.username));
  }
  if (filter.email !== undefined) {
    conditions.push(sameIdentity(sql, "email", filter.email));
  }
  if (filter.q !== undefined) {
    // Answered by the trigram index users_search (migration 004).
    const pattern = `%${lowerCaseKey(filter.q).replace(/[\\%_]/g, "\\$&")}%`;
    conditions.push(sql`(users.username_key like ${pattern}
      or users.name_key like ${pattern} or users.email_key like ${pattern})`);
  }
  if (filter.ids !== undefined) {
    conditions.push(sql`users.id = any(${filter.ids}::int[])`);
  }
  if (place) conditions.push(place);
  if (conditions.length === 0) return sql``;
  return sql`where ${
    conditions.reduce((all, c, i) => i === 0 ? c : sql`${all} and ${c}`)
  }`;
}
