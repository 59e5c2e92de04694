import type { PendingQuery, Row, Sql } from "postgres";
import type { ListPosition, ListSort } from "../users/listing.ts";

export type Fragment = PendingQuery<Row[]>;

/**
 * One statement's share of a list in an order: the rows it reads (beside
 * the filter), their order, and each row's key as text (over the read
 * row `b`: its `created_at`, `username_fold` and `id`). An order is read
 * in one part, or two where some rows lack the key.
 */
export interface Part {
  place: Fragment;
  order: Fragment;
  key: Fragment;
}

/**
 * The parts of the list in `sort` from `after` on, each read by an index
 * in its order (migrations 001 and 011): `(created_at, id)`, or the unique
 * `username_fold`, whose ties (none) id breaks. Users whose canonical key
 * an older release left unwritten (until startup or housekeeping writes it)
 * follow the keyed ones by id, so a walk by username still meets everyone.
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
    }];
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
