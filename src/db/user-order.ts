import type { PendingQuery, Row, Sql } from "postgres";
import type { ListPosition, ListSort } from "../users/listing.ts";

export type Fragment = PendingQuery<Row[]>;

/**
 * One statement's share of a list in an order: the rows it reads (beside
 * the filter), their order, and each row's key as text (over the read
 * row `b`: its `created_at`, `username_fold`, `last_login_at` and `id`).
 * An order is read in one part, or two where some rows lack the key.
 */
export interface Part {
  place: Fragment;
  order: Fragment;
  key: Fragment;
  /**
   * The key is `created_at`, which no write changes: a row's key read
   * after the row is the key it was read with, as long as the row lives.
   */
  keyNeverChanges?: true;
}

/**
 * The position of a read row `b` of `part` (its id and the part's key),
 * where the next read starts: `<id>.<key>`, or `<id>` without a key.
 */
export const positionText = (sql: Sql, part: Part) =>
  sql`b.id || coalesce('.' || ${part.key}, '')`;

/**
 * The parts of the list in `sort` from `after` on, each read by an index
 * in its order (migrations 001, 011, 037 and 039): `(created_at, id)`,
 * the unique `username_fold` (and `(username_fold, id)`, which a walk
 * reads alone), whose ties (none) id breaks, or
 * `(last_login_at, id)`. Users whose canonical key an older release left
 * unwritten (until startup or housekeeping writes it) follow the keyed ones
 * by id, so a walk by username still meets everyone.
 */
export function partsOf(
  sql: Sql,
  sort: ListSort,
  after: ListPosition | undefined,
): Part[] {
  const down = sort.startsWith("-");
  const dir = sql.unsafe(down ? "desc" : "asc") as unknown as Fragment;
  const past = sql.unsafe(down ? "<" : ">") as unknown as Fragment;
  if (sort === "createdAt" || sort === "-createdAt") {
    return [{
      // Exact: microseconds times an interval of one stay integral in a double.
      place: after
        ? sql`(users.created_at, users.id) ${past}
          (timestamptz 'epoch' + ${after.at}::int8 * interval '1 microsecond', ${after.id}::int)`
        : sql`true`,
      order: sql`users.created_at ${dir}, users.id ${dir}`,
      key: sql`(extract(epoch from b.created_at) * 1000000)::int8::text`,
      keyNeverChanges: true,
    }];
  }
  if (sort === "lastLoginAt" || sort === "-lastLoginAt") {
    return lastLoginParts(sql, after, dir, past);
  }
  const keyed: Part | undefined = after?.at === null && !down ? undefined : {
    place: after && after.at !== null
      ? sql`(users.username_fold, users.id) ${past} (${after.at}::text, ${after.id}::int)`
      : sql`users.username_fold is not null`,
    order: sql`users.username_fold ${dir}, users.id ${dir}`,
    key: sql`b.username_fold`,
  };
  const unkeyed: Part | undefined = after && after.at !== null && down
    ? undefined
    : {
      place: after?.at === null
        ? sql`users.username_fold is null and users.id ${past} ${after.id}::int`
        : sql`users.username_fold is null`,
      order: sql`users.id ${dir}`,
      key: sql`null::text`,
    };
  const parts = down ? [unkeyed, keyed] : [keyed, unkeyed];
  return parts.filter((p): p is Part => p !== undefined);
}

/**
 * By last sign-in: those who signed in, then those who never did, in both
 * directions. Both parts order by `(last_login_at, id)` so both read its
 * index (migration 037): the second's rows are all null there, so its order
 * is by id, and a null is a value the index finds (`is null`).
 */
function lastLoginParts(
  sql: Sql,
  after: ListPosition | undefined,
  dir: Fragment,
  past: Fragment,
): Part[] {
  const order = sql`users.last_login_at ${dir}, users.id ${dir}`;
  const never: Part = {
    place: after?.at === null
      ? sql`users.last_login_at is null and users.id ${past} ${after.id}::int`
      : sql`users.last_login_at is null`,
    order,
    key: sql`null::text`,
  };
  if (after?.at === null) return [never];
  return [{
    place: after
      ? sql`(users.last_login_at, users.id) ${past}
        (timestamptz 'epoch' + ${after.at}::int8 * interval '1 microsecond', ${after.id}::int)`
      : sql`users.last_login_at is not null`,
    order,
    key: sql`(extract(epoch from b.last_login_at) * 1000000)::int8::text`,
  }, never];
}
