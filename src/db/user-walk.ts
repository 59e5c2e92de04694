import type { PendingQuery, Row, Sql } from "postgres";
import type { ListShape, UserFilter } from "./user-filter.ts";
import { type Fragment, type Part, positionText } from "./user-order.ts";
import { inReach } from "./reach.ts";

/**
 * A page for a caller limited to groups' members (user-list.ts) is first
 * looked for by a walk of the order's index, at most `budget` users,
 * keeping members (`walk` below), when the groups have at least `members`
 * members and the page is at most `page` users. Else, and when the walk
 * finds too few before its budget runs out, the page is read from the
 * membership: every member's row, sorted.
 */
export const WALK = { budget: 20_000, members: 2_500, page: 200 };

/**
 * The walk's statements over the list's `where` and its items' mapping
 * (user-list.ts's `createUserList`).
 */
export function userWalk(
  sql: Sql,
  where: (filter: UserFilter, place?: Fragment) => Fragment,
  itemsOf: (shape: ListShape) => PendingQuery<Row[]>,
) {
  /**
   * The first WALK.budget users of the part from its place, by their keys
   * and id: the planner keeps only the columns a reader uses, so the
   * order's index is read alone.
   */
  const walked = (part: Part) =>
    sql`select users.id, users.created_at, users.username_fold,
        users.last_login_at
      from users ${where({}, part.place)}
      order by ${part.order}
      limit ${WALK.budget}`;

  /** Whether the groups have WALK.members members, to be walked. */
  const walkable = (groupIds: number[]) =>
    sql`(select count(*) from (select 1 from scim_members m
      where m.group_id = any(${groupIds}::int[])
      limit ${WALK.members}) d) = ${WALK.members}`;

  /**
   * `select` for a caller limited to groups' members, by a walk of the
   * order's index from the part's place: of the first WALK.budget users
   * there (read from the index alone where it holds the order's keys), the
   * members, until `n`; none unless the groups have WALK.members members.
   * Reading the membership costs a page every member's row, which at a
   * million users and a group of ten thousand was 30 ms of the database's
   * time; a walk reads about n × users / members index entries, and its
   * budget bounds the cost where members cluster far along the order. The
   * middle level's alias is `users`, so the order's fragments name the
   * walked keys, whose order the planner keeps: it stops at the n-th member.
   */
  const walk = (
    groupIds: number[],
    part: Part,
    n: number,
    mark: number,
    shape: ListShape,
  ) => {
    return sql`
      select b.json, case when row_number() over () = ${mark}
        then ${positionText(sql, part)} end
      from (
        select row_to_json(u)::text as json, users.created_at,
          users.username_fold, users.last_login_at, users.id
        from (
          select users.id from (${walked(part)}) users
          where ${walkable(groupIds)} and ${inReach(sql, { groupIds })}
          order by ${part.order}
          limit ${n}) hits
        join users on users.id = hits.id, lateral (select ${itemsOf(shape)}) u
        order by ${part.order}) b`;
  };

  /**
   * Whether a walk of the part found all its members: it ran (the groups
   * are large enough) and read all the part's users from its place (fewer
   * than WALK.budget).
   */
  const walkedAll = async (groupIds: number[], part: Part) => {
    const [{ all }] = await sql<{ all: boolean }[]>`
      select ${walkable(groupIds)} and (select count(*)
        from (${walked(part)}) walked) < ${WALK.budget} as all`;
    return all;
  };

  /**
   * The groups of a limited reach when a page of `n` is walked (`walk`).
   * Each order's index holds its keys and the id (migrations 001, 037 and
   * 039), so a walk reads the index alone.
   */
  const walkedGroups = (filter: UserFilter, n: number) => {
    const { reach, ...rest } = filter;
    if (!reach || reach === "all" || n > WALK.page) return undefined;
    // Other filters choose their own index; the walk is for the reach alone.
    return Object.values(rest).every((v) => v === undefined)
      ? reach.groupIds
      : undefined;
  };

  return { walk, walkedAll, walkedGroups };
}
