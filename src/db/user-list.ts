import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import {
  DEFAULT_SORT,
  type ListPosition,
  type ListSort,
} from "../users/listing.ts";
import { disableExpired } from "./account-state.ts";
import { type ListShape, type UserFilter, whereOf } from "./user-filter.ts";
import {
  type Fragment,
  type Part,
  partsOf,
  positionText,
} from "./user-order.ts";
import { userWalk } from "./user-walk.ts";

/** A count is exact up to this many users; past it, the planner's estimate. */
export const COUNT_EXACT = 10_000;

/** How many users a filter matches. */
export interface UserCount {
  count: number;
  /** False when `count` is the planner's estimate (more than COUNT_EXACT match). */
  exact: boolean;
}

export interface ListPage {
  /** Users as JSON text, in list order. */
  rows: string[];
  /** Where the next page starts, when more users match. */
  next?: ListPosition;
}

/** Rows per statement of the streamed list: its memory bound. */
export const LIST_BATCH = 2000;

/**
 * The list's SQL. Every read is one short statement on a pooled connection
 * that returns to the pool when it ends: keyset batches in the order's
 * index (user-order.ts), never a cursor or transaction held while a client
 * reads. So a slow or stalled client holds no connection, and no statement
 * outlives the statement timeout however long the list.
 *
 * What a reader of a list in several statements (a streamed list, a page
 * walk) sees while others write: each user at most once, in order (by
 * username, a user renamed meanwhile from before the reader's place to
 * after it, once more); every user that existed from the first statement
 * to the last and matched the filter throughout; each user as it was when
 * its own batch was read; users created meanwhile only if they sort after
 * the reader's place (oldest first, usually yes, as creation times grow),
 * users deleted meanwhile only if their batch was read before the deletion.
 *
 * `user` is the store's one mapping from a users row to what the service
 * shows, which PostgreSQL serialises as JSON (row_to_json writes what
 * JSON.stringify would).
 */
export function createUserList(
  sql: Sql,
  user: PendingQuery<Row[]>,
  /** What joins the rows of a batch: `,` for a JSON array, `\n` for NDJSON. */
  separator: "," | "\n" = ",",
  /** The items of `include=state`, when this list offers them. */
  withState?: PendingQuery<Row[]>,
) {
  /** Which mapping a list's items use. */
  const itemsOf = (shape: ListShape) =>
    shape === "state" && withState ? withState : user;

  const where = (filter: UserFilter, place?: Fragment) =>
    whereOf(sql, filter, place);
  const { walk, walkedAll, walkedGroups } = userWalk(sql, where, itemsOf);

  /**
   * Up to `n` matching users of one part, each user's JSON and, after it,
   * `keys` (columns of the users row).
   */
  const read = (
    filter: UserFilter,
    part: Part,
    n: number,
    shape: ListShape,
    keys: Fragment = sql``,
  ) =>
    sql`
      select row_to_json(u)::text as json${keys}
      from users, lateral (select ${itemsOf(shape)}) u
      ${where(filter, part.place)}
      order by ${part.order}
      limit ${n}`;

  /** The columns `select`'s window reads the parts' keys from (Part.key). */
  const keyColumns =
    sql`, users.created_at, users.username_fold, users.last_login_at, users.id`;

  /**
   * Up to `n` matching users of one part of an order (`partsOf`), as rows
   * of two columns: each user's JSON, as PostgreSQL wrote it, and, for the
   * `mark`-th row only, its position (`positionText`), where the next
   * read starts. A row per user rather than one
   * aggregate: joining the JSON in PostgreSQL (string_agg) cost its backend
   * more than the rest of the statement. The window counts the rows in the
   * subquery's order, which the outer level keeps (no join, no order of its
   * own), so only one row's position is computed.
   */
  const select = (
    filter: UserFilter,
    part: Part,
    n: number,
    mark: number,
    shape: ListShape,
  ) =>
    sql`
      select b.json, case when row_number() over () = ${mark}
        then ${positionText(sql, part)} end
      from (${read(filter, part, n, shape, keyColumns)}) b`;

  /**
   * Up to `n` matching users after `after` in `sort`, read part by part
   * until `n` are found, as rows of `select` (or first of `walk`), the
   * `mark`-th row's position among them.
   */
  const rows = async (
    filter: UserFilter,
    sort: ListSort,
    after: ListPosition | undefined,
    n: number,
    mark: number,
    shape: ListShape,
  ) => {
    const found: [string, string | null][] = [];
    for (const part of partsOf(sql, sort, after)) {
      const need = n - found.length;
      if (need <= 0) break;
      const groups = walkedGroups(filter, need);
      let more = groups
        ? await walk(groups, part, need, mark - found.length, shape)
          .values() as unknown as [string, string | null][]
        : [];
      // Fewer than asked: the part's end, or the budget's (or groups too
      // small to walk), when the membership is read instead.
      if (more.length < need && !(groups && await walkedAll(groups, part))) {
        more = await select(filter, part, need, mark - found.length, shape)
          .values() as unknown as [string, string | null][];
      }
      found.push(...more);
    }
    return found;
  };

  /**
   * The position (as `select` marks it) of the user `id` in a part whose
   * key never changes, read from the user's row; undefined once the user
   * is deleted.
   */
  const positionOf = async (part: Part, id: number) => {
    const [row] = await sql<{ position: string }[]>`
      select ${positionText(sql, part)} as position
      from users b where b.id = ${id}`;
    return row?.position;
  };

  // One byte, stored as such: a typed array's `set` per row for it cost a
  // list of 1,000 users about a twentieth of the service's own work.
  const separatorByte = separator.charCodeAt(0);
  const decoder = new TextDecoder();
  // Buffers of batches whose text is made: a batch writes into one, so
  // a list allocates no memory of its size on every request.
  const spare: Uint8Array[] = [];

  /**
   * Up to `n` matching users as one text, their JSON joined by the
   * separator, and the last one's position when there are `n`; `count`:
   * how many. Each row's JSON, the driver's view of the bytes it read, is
   * copied into a buffer as it arrives and not kept, and the buffer is
   * decoded once. Rows held in the driver's result until their statement
   * ended were found alive by young-generation collections under load and
   * moved to the old generation (the collector's largest cost), and a text
   * decoded per row was the next. A text, not bytes, for the body: the HTTP
   * server encodes a text as it sends it, where it copies bytes first.
   *
   * A part whose key never changes (the default order's) is read by
   * `read` alone, without the window that marks a row's position (it cost
   * PostgreSQL about a tenth more for a list of 1,000 users), and a full
   * batch's last position from its last user's row afterwards; if that user was deleted in between, the part is read
   * again by `select`, which marks the position in the same statement.
   */
  const batch = async (
    filter: UserFilter,
    sort: ListSort,
    after: ListPosition | undefined,
    n: number,
    shape: ListShape,
  ) => {
    let out = spare.pop() ?? new Uint8Array(64 * 1024);
    let used = 0;
    let count = 0;
    let last = 0;
    let mark: string | undefined;
    const take = (row: unknown) => {
      const [json, position] = row as unknown as [Uint8Array, Uint8Array?];
      const sep = count === 0 ? 0 : 1;
      if (used + sep + json.length > out.length) {
        const bigger = new Uint8Array(
          Math.max(2 * out.length, used + sep + json.length),
        );
        bigger.set(out.subarray(0, used));
        out = bigger;
      }
      if (sep > 0) out[used++] = separatorByte;
      last = used;
      out.set(json, used);
      used += json.length;
      count++;
      if (position) mark = decoder.decode(position);
    };
    for (const part of partsOf(sql, sort, after)) {
      const need = n - count;
      if (need <= 0) break;
      if (part.keyNeverChanges) {
        const [countBefore, usedBefore] = [count, used];
        await read(filter, part, need, shape).raw().forEach(take);
        // Short: the part's end, where no position is needed.
        if (count - countBefore < need) continue;
        const { id } = JSON.parse(decoder.decode(out.subarray(last, used)));
        mark = await positionOf(part, id);
        if (mark !== undefined) continue;
        [count, used] = [countBefore, usedBefore];
      }
      await select(filter, part, need, need, shape).raw().forEach(take);
    }
    const text = decoder.decode(out.subarray(0, used));
    // Kept for the next batch; a failed statement's is left to the collector.
    if (spare.length < 16) spare.push(out);
    return { text, count, mark };
  };

  /** The position a row of `rows` carries. */
  const positionFrom = (mark: string): ListPosition => {
    const dot = mark.indexOf(".");
    return dot < 0
      ? { at: null, id: Number(mark) }
      : { at: mark.slice(dot + 1), id: Number(mark.slice(0, dot)) };
  };

  return {
    /**
     * The list's version: it changes with every write of users, in that
     * write's transaction as it commits, on any instance (migrations 004
     * and 017). Read before the list, so a tag never names a state older than
     * the body it goes with.
     */
    async listVersion(): Promise<string> {
      const [{ version }] = await sql<{ version: string }[]>`
        select version::text from users_version where singleton`;
      return version;
    },

    /**
     * What a limited list's tag adds to the list's version: each group's
     * id and version (a change of its members raises it; a group gone
     * drops out), so a member joining or leaving changes the tag.
     */
    async membershipVersion(groupIds: readonly number[]): Promise<string> {
      const [{ version }] = await sql<{ version: string }[]>`
        select coalesce(string_agg(g.id || ':' || g.version, ',' order by g.id),
          '') as version
        from scim_groups g where g.id = any(${groupIds as number[]}::int[])`;
      return version;
    },

    /**
     * The version of a list filtered by `status`: the list's, and how many
     * disables have run out by themselves since they were last written
     * (that moves users from disabled to active with no write). The count
     * only grows between writes, and a write changes the list's version.
     */
    async statusListVersion(): Promise<string> {
      const [{ version }] = await sql<{ version: string }[]>`
        select v.version::text || '-' || (select count(*) from users
          where ${disableExpired(sql)})::text as version
        from users_version v where v.singleton`;
      return version;
    },

    /**
     * Every matching user after `after` as JSON text, a batch of elements
     * joined by the separator at a time, one statement each, so the whole
     * list never sits in memory and nothing is held between batches.
     */
    listJson(
      filter: UserFilter = {},
      after?: ListPosition,
      batchSize = LIST_BATCH,
      shape: ListShape = "user",
      sort: ListSort = DEFAULT_SORT,
    ): AsyncIterable<string> {
      let position = after;
      let done = false;
      // A plain iterator rather than an async generator: each step is the
      // batch's own promise, with no generator's queue around it.
      return {
        [Symbol.asyncIterator]: () => ({
          async next(): Promise<IteratorResult<string>> {
            if (done) return { done: true, value: undefined };
            const found = await batch(
              filter,
              sort,
              position,
              batchSize,
              shape,
            );
            // A short batch is the last: no statement to learn that nothing follows.
            if (found.count < batchSize) done = true;
            if (found.count === 0) return { done: true, value: undefined };
            // A full batch carries its last user's position.
            position = found.mark === undefined
              ? undefined
              : positionFrom(found.mark);
            return { done: false, value: found.text };
          },
          return(): Promise<IteratorResult<string>> {
            done = true;
            return Promise.resolve({ done: true, value: undefined });
          },
        }),
      };
    },

    /**
     * How many users match: counted up to COUNT_EXACT + 1 (the list's own
     * indexes find them, and the count stops there), so a count costs at
     * most what reading that many rows does, however many users there are.
     * Past it, the planner's estimate of the filter's rows, said as such.
     */
    async countMatching(filter: UserFilter): Promise<UserCount> {
      const [{ n }] = await sql<{ n: number }[]>`
        select count(*)::int as n from (
          select 1 from users ${where(filter)} limit ${COUNT_EXACT + 1}) m`;
      if (n <= COUNT_EXACT) return { count: n, exact: true };
      const [row] = await sql<
        { "QUERY PLAN": [{ Plan: { "Plan Rows": number } }] }[]
      >`
        explain (format json) select 1 from users ${where(filter)}`;
      const estimate = Math.round(row["QUERY PLAN"][0].Plan["Plan Rows"]);
      return { count: Math.max(estimate, n), exact: false };
    },

    /** How many users match, all counted (an export's record), in `q`'s transaction. */
    async exactCount(
      filter: UserFilter,
      q: Sql | TransactionSql = sql,
    ): Promise<number> {
      const [{ n }] = await q<{ n: number }[]>`
        select count(*)::int as n from users ${where(filter)}`;
      return n;
    },

    /**
     * At most `limit` matching users after `after` in `sort`, in one
     * statement (two where the page reaches users without a username key).
     */
    async listPage(
      filter: UserFilter,
      after: ListPosition | undefined,
      limit: number,
      shape: ListShape = "user",
      sort: ListSort = DEFAULT_SORT,
    ): Promise<ListPage> {
      const found = await rows(filter, sort, after, limit + 1, limit, shape);
      const page = found.length <= limit ? found : found.slice(0, limit);
      return {
        rows: page.map((r) => r[0]),
        next: found.length > limit
          ? positionFrom(page[limit - 1][1]!)
          : undefined,
      };
    },
  };
}
