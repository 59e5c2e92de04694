/**
 * The SCIM lists' reads: users and groups in a sort order, a page from an
 * offset or (keyset) after or before a place in that order, read in index
 * order, and their counts. A place is a row's sort key and id; times are
 * keyed as microseconds since the epoch (the columns' full precision), so
 * that a key a client hands back is checked as a number, never parsed by
 * the database as a time.
 */
import type { PendingQuery, Row, Sql } from "postgres";
import type { ScimGroupRow, ScimUserRow } from "./scim-types.ts";

type Fragment = PendingQuery<Row[]>;

/** Sort orders of the users' list (`sortBy`). */
export type UserSort = "id" | "userName" | "meta.created" | "meta.lastModified";
/** Sort orders of the groups' list. */
export type GroupSort =
  | "id"
  | "displayName"
  | "meta.created"
  | "meta.lastModified";

/** A place in a list: a row's sort key (null when sorted by id) and id. */
export interface ListAfter {
  key: string | null;
  id: number;
}

/** How a sort's key is kept: none (by id), text, or a time in microseconds. */
export type SortKeyKind = "none" | "text" | "time";

/**
 * Where a page starts: right after `at` or, `back`, right before it (at
 * null: the list's start, or its end going back). The rows come in list
 * order either way.
 */
export interface Keyset {
  at: ListAfter | null;
  back: boolean;
}

interface PageQuery<S> {
  where?: Fragment;
  sort: S;
  descending: boolean;
  limit: number;
  /** Rows skipped, from the start or from the place: a page by `startIndex`. */
  offset?: number;
  /** A page by place, read in index order. */
  from?: Keyset;
}

interface Order {
  /** The sort expression (SQL text of our own). */
  expr: string;
  kind: SortKeyKind;
}

const USER_ORDER: Record<UserSort, Order> = {
  "id": { expr: "u.id", kind: "none" },
  "userName": { expr: "u.username_fold", kind: "text" },
  "meta.created": { expr: "u.created_at", kind: "time" },
  "meta.lastModified": {
    expr: "coalesce(u.modified_at, u.created_at)",
    kind: "time",
  },
};

const GROUP_ORDER: Record<GroupSort, Order> = {
  "id": { expr: "g.id", kind: "none" },
  "displayName": { expr: "lower(g.display_name)", kind: "text" },
  "meta.created": { expr: "g.created_at", kind: "time" },
  "meta.lastModified": { expr: "g.modified_at", kind: "time" },
};

/** How each sort keeps its key: what a place handed back must be. */
export const userSortKeyKind = (s: UserSort) => USER_ORDER[s].kind;
export const groupSortKeyKind = (s: GroupSort) => GROUP_ORDER[s].kind;

/** The SQL the lists share with the rest of the SCIM store. */
export interface ListShapes {
  userShown: (connectionId: number) => Fragment;
  userFrom: (connectionId: number) => Fragment;
  groupShown: Fragment;
  membersOf: (
    groupIds: number[],
  ) => Promise<Map<number, { value: number; display: string }[]>>;
}

export function createScimLists(sql: Sql, shapes: ListShapes) {
  const raw = (text: string) => sql.unsafe(text) as unknown as Fragment;

  /** The sort's key as a place's text: times in microseconds since the epoch. */
  const keyOf = (o: Order) =>
    raw(
      o.kind === "none"
        ? "null::text"
        : o.kind === "text"
        ? o.expr
        : `(extract(epoch from ${o.expr}) * 1000000)::int8::text`,
    );

  /** Rows of `from` in `o`'s order (ties by `id`), as the query asks. */
  const page = <R>(
    shown: Fragment,
    from: Fragment,
    where: Fragment,
    o: Order,
    id: string,
    q: PageQuery<unknown>,
  ) => {
    // Going back reads the order reversed from the place, then turns it round.
    const back = q.from?.back ?? false;
    const descending = q.descending !== back;
    const dir = raw(descending ? "desc" : "asc");
    const expr = raw(o.expr);
    const idCol = raw(id);
    const at = q.from?.at;
    const place = !at
      ? sql`true`
      : o.kind === "none"
      ? sql`${idCol} ${raw(descending ? "<" : ">")} ${at.id}::int`
      : sql`(${expr}, ${idCol}) ${raw(descending ? "<" : ">")} (${
        o.kind === "text"
          ? sql`${at.key}::text`
          : sql`timestamptz 'epoch' + ${at.key}::int8 * interval '1 microsecond'`
      }, ${at.id}::int)`;
    const order = o.kind === "none"
      ? sql`${idCol} ${dir}`
      : sql`${expr} ${dir}, ${idCol} ${dir}`;
    const offset = q.offset ?? 0;
    // Rows skipped are read as ids alone (often from the index alone): a
    // row shown is made (its groups, its times as text) for the page only.
    const rows = offset === 0
      ? sql<(R & { sortKey: string | null })[]>`
        select ${shown}, ${keyOf(o)} as "sortKey"
        from ${from}
        where ${where} and ${place}
        order by ${order}
        limit ${q.limit}`
      : sql<(R & { sortKey: string | null })[]>`
        select ${shown}, ${keyOf(o)} as "sortKey"
        from ${from}
        where ${idCol} in (select ${idCol} from ${from}
          where ${where} and ${place}
          order by ${order}
          offset ${offset} limit ${q.limit})
        order by ${order}`;
    return rows.then((rows) => back ? rows.reverse() : rows);
  };

  /** Every `every`-th row's place in `o`'s order (the `every`-th, the 2×`every`-th, ...). */
  const places = async (
    from: Fragment,
    where: Fragment,
    o: Order,
    id: string,
    q: { descending: boolean; every: number },
  ): Promise<ListAfter[]> => {
    const dir = raw(q.descending ? "desc" : "asc");
    const idCol = raw(id);
    const order = o.kind === "none"
      ? sql`${idCol} ${dir}`
      : sql`${raw(o.expr)} ${dir}, ${idCol} ${dir}`;
    // The key made as text for the rows kept only, not for every row read.
    const sortKey = raw(o.kind === "none" ? "null" : o.expr);
    return await sql<ListAfter[]>`
      select t.id, ${keyOf({ expr: "t.k", kind: o.kind })} as key from (
        select ${idCol} as id, ${sortKey} as k,
          row_number() over (order by ${order}) as n
        from ${from} where ${where}) t
      where t.n % ${q.every} = 0
      order by t.n`;
  };

  return {
    users: {
      /** The version of the users list (migration 004): moves with every write of users. */
      async listVersion(): Promise<string> {
        const [row] = await sql<{ version: string }[]>`
          select version::text from users_version where singleton`;
        return row.version;
      },

      async count(connectionId: number, where?: Fragment): Promise<number> {
        const [{ n }] = await sql<{ n: number }[]>`
          select count(*)::int as n from ${shapes.userFrom(connectionId)}
          where ${where ?? sql`true`}`;
        return n;
      },

      /**
       * Every `every`-th user's place in `sort` order: where a page deep
       * in the list starts reading (a count of `every` rows at most then
       * skipped, instead of all before it).
       */
      places: (
        connectionId: number,
        q: Pick<PageQuery<UserSort>, "where" | "sort" | "descending"> & {
          every: number;
        },
      ) =>
        places(
          shapes.userFrom(connectionId),
          q.where ?? sql`true`,
          USER_ORDER[q.sort],
          "u.id",
          q,
        ),

      /** A page in `sort` order: `offset` rows skipped from the start or from a place. */
      list: (connectionId: number, q: PageQuery<UserSort>) =>
        page<ScimUserRow>(
          shapes.userShown(connectionId),
          shapes.userFrom(connectionId),
          q.where ?? sql`true`,
          USER_ORDER[q.sort],
          "u.id",
          q,
        ),
    },

    groups: {
      async count(connectionId: number, where?: Fragment): Promise<number> {
        const [{ n }] = await sql<{ n: number }[]>`
          select count(*)::int as n from scim_groups g
          where g.connection_id = ${connectionId} and ${where ?? sql`true`}`;
        return n;
      },

      /** The connection's groups in `sort` order, their members when asked for. */
      async list(
        connectionId: number,
        q: PageQuery<GroupSort> & { withMembers: boolean },
      ): Promise<(ScimGroupRow & { sortKey: string | null })[]> {
        const rows = await page<ScimGroupRow>(
          shapes.groupShown,
          sql`scim_groups g`,
          sql`g.connection_id = ${connectionId} and ${q.where ?? sql`true`}`,
          GROUP_ORDER[q.sort],
          "g.id",
          q,
        );
        if (q.withMembers && rows.length > 0) {
          const members = await shapes.membersOf(rows.map((r) => r.id));
          for (const row of rows) row.members = members.get(row.id) ?? [];
        }
        return rows;
      },
    },
  };
}
