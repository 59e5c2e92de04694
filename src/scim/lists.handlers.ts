/**
 * The lists and searches (lists.routes.ts): users, groups, or both, one
 * after the other. A page by cursor is a keyset read from the cursor's
 * place (cursor.ts); a page by `startIndex` is read by offset, or, when
 * the pages are read in sequence, from where the page before it ended.
 */
import type { Context } from "hono";
import type { Connection } from "../db/scim.ts";
import type { ListAfter } from "../db/scim-list.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import {
  cursorListResponse,
  listResponse,
  scimBase,
  sendScim,
  showsMembers,
} from "./answers.ts";
import { cursorPage, encodeCursor, type Segment } from "./cursor.ts";
import { ListCache, listKey } from "./list-cache.ts";
import type { ListKind, ListRequest } from "./list-query.ts";
import type * as routes from "./lists.routes.ts";
import { groupResource, project, userResource } from "./resources.ts";
import type { ScimDeps } from "./scim.handlers.ts";

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

type Type = "users" | "groups";
const TYPES: Record<ListKind, Type[]> = {
  users: ["users"],
  groups: ["groups"],
  all: ["users", "groups"],
};

type Row = { id: number; sortKey: string | null };

/** How far apart the places kept of a list are, in users. */
const PLACE_EVERY = 1000;

export function createListHandlers(
  { store, config }: Pick<ScimDeps, "store" | "config">,
) {
  // Counts of a filter's users at a version of the list: paging through a
  // million users counts them once, not once a page.
  const counts = new ListCache<{ version: string; n: number }>((v) =>
    2 * v.version.length + 16
  );
  // Where a page of a list read in sequence ended: the next page starts
  // there in index order rather than skipping `startIndex` rows.
  const ends = new ListCache<ListAfter>((v) => 2 * (v.key?.length ?? 0) + 16);
  // Every PLACE_EVERY-th user's place in a list at a version: a page far
  // into the list skips fewer than PLACE_EVERY users, not all before it.
  // An entry counts its places' bytes once they are read.
  const placesKnown = new ListCache<
    { version: string; places: Promise<ListAfter[]>; bytes: number }
  >((v) => 2 * v.version.length + v.bytes);

  // The users list's version, read once a request: its count and its
  // places are known at that version.
  const versions = new WeakMap<ListRequest, Promise<string>>();
  const versionOf = (list: ListRequest) => {
    let version = versions.get(list);
    if (!version) {
      version = store.scim.users.listVersion();
      versions.set(list, version);
    }
    return version;
  };

  const totalOf = async (
    type: Type,
    connection: Connection,
    list: ListRequest,
  ) => {
    if (type === "groups") {
      return await store.scim.groups.count(connection.id, list.where.groups);
    }
    const filterKey = listKey(connection.id, list.filter ?? null);
    const version = await versionOf(list);
    let counted = counts.get(filterKey);
    if (counted?.version !== version) {
      counted = {
        version,
        n: await store.scim.users.count(connection.id, list.where.users),
      };
      counts.set(filterKey, counted);
    }
    return counted.n;
  };

  /** The rows of `type` from a place (a cursor's page). */
  const segment = (
    type: Type,
    connection: Connection,
    list: ListRequest,
  ): Segment<Row> =>
  (from, limit) =>
    type === "users"
      ? store.scim.users.list(connection.id, {
        where: list.where.users,
        sort: list.userSort,
        descending: list.descending,
        limit,
        from,
      })
      : store.scim.groups.list(connection.id, {
        where: list.where.groups,
        sort: list.groupSort,
        descending: list.descending,
        limit,
        from,
        withMembers: showsMembers(projectionOf(list)),
      });

  /**
   * The place of the last of the first `skipped` users (a multiple of
   * PLACE_EVERY) at or before `offset`, from the list's places at its
   * version, found once a version and shared by the requests that wait
   * for them; none before the first PLACE_EVERY.
   */
  const placeBefore = async (
    connection: Connection,
    list: ListRequest,
    offset: number,
  ): Promise<{ at: ListAfter; skipped: number } | undefined> => {
    const k = Math.floor(offset / PLACE_EVERY);
    if (k === 0) return undefined;
    const key = listKey(
      connection.id,
      list.filter ?? null,
      list.userSort,
      list.descending,
    );
    const version = await versionOf(list);
    let known = placesKnown.get(key);
    if (known?.version !== version) {
      const entry = {
        version,
        // A list too long to read within the statement timeout (a sort
        // whose index leaves the rows to read, a filter no index answers)
        // has no places at this version: its pages are read by offset.
        places: store.scim.users.places(connection.id, {
          where: list.where.users,
          sort: list.userSort,
          descending: list.descending,
          every: PLACE_EVERY,
        }).catch(() => []),
        bytes: 0,
      };
      known = entry;
      placesKnown.set(key, entry);
      entry.places.then((places) => {
        if (placesKnown.get(key) !== entry) return;
        entry.bytes = places.reduce(
          (n, p) => n + 2 * (p.key?.length ?? 0) + 16,
          0,
        );
        placesKnown.set(key, entry);
      });
    }
    const at = (await known.places)[k - 1];
    return at && { at, skipped: k * PLACE_EVERY };
  };

  /** `limit` users from the `offset`-th: after the previous page when it was read here, else from the nearest place. */
  const usersFrom = async (
    connection: Connection,
    list: ListRequest,
    offset: number,
    limit: number,
  ) => {
    const sequence = (at: number) =>
      listKey(
        listKey(connection.id, list.filter ?? null),
        list.userSort,
        list.descending,
        at,
      );
    const after = ends.get(sequence(offset));
    const near = after
      ? undefined
      : await placeBefore(connection, list, offset);
    const at = after ?? near?.at;
    const rows = await store.scim.users.list(connection.id, {
      where: list.where.users,
      sort: list.userSort,
      descending: list.descending,
      offset: after ? 0 : offset - (near?.skipped ?? 0),
      limit,
      ...at && { from: { at, back: false } },
    });
    const last = rows.at(-1);
    if (last && rows.length === limit) {
      ends.set(sequence(offset + rows.length), {
        key: last.sortKey,
        id: last.id,
      });
    }
    return rows;
  };

  /** A page by `startIndex`: through the types in turn, skipping each one's total. */
  const indexPage = async (
    types: Type[],
    totals: number[],
    connection: Connection,
    list: ListRequest,
  ) => {
    const out: { type: Type; row: Row }[] = [];
    let skip = list.startIndex - 1;
    for (const [i, type] of types.entries()) {
      if (out.length === list.count) break;
      if (skip >= totals[i]) {
        skip -= totals[i];
        continue;
      }
      const limit = list.count - out.length;
      const rows = type === "users"
        ? await usersFrom(connection, list, skip, limit)
        : await store.scim.groups.list(connection.id, {
          where: list.where.groups,
          sort: list.groupSort,
          descending: list.descending,
          offset: skip,
          limit,
          withMembers: showsMembers(projectionOf(list)),
        });
      out.push(...rows.map((row) => ({ type, row })));
      skip = 0;
    }
    return out;
  };

  const answer = async (
    c: Context<AppEnv>,
    connection: Connection,
    list: ListRequest,
    kind: ListKind,
  ) => {
    const types = TYPES[kind];
    const totals = await Promise.all(
      types.map((t) => totalOf(t, connection, list)),
    );
    const total = totals.reduce((a, b) => a + b, 0);
    const base = scimBase(c, config.TRUST_PROXY);
    const shown = (r: { type: Type; row: Row }) => {
      const resource = project(
        r.type === "users"
          ? userResource(r.row as never, base)
          : groupResource(r.row as never, base),
        list.attributes,
        list.excludedAttributes,
      );
      if (kind !== "all") return resource;
      // Across types a client tells them apart by it, whatever it asked for.
      const meta = resource.meta as Record<string, unknown> | undefined;
      return {
        ...resource,
        meta: {
          ...meta,
          resourceType: r.type === "users" ? "User" : "Group",
        },
      };
    };
    if (!list.page) {
      if (list.count === 0) {
        return sendScim(
          c,
          200,
          listResponse(total, list.startIndex, undefined),
        );
      }
      const rows = await indexPage(types, totals, connection, list);
      return sendScim(
        c,
        200,
        listResponse(total, list.startIndex, rows.map(shown)),
      );
    }
    if (list.count === 0) {
      return sendScim(c, 200, cursorListResponse(total, undefined, {}));
    }
    const page = await cursorPage(
      types.map((t) => segment(t, connection, list)),
      list.page,
      list.count,
    );
    return sendScim(
      c,
      200,
      cursorListResponse(
        total,
        page.rows.map((r) => shown({ type: types[r.segment], row: r.row })),
        {
          next: page.next && encodeCursor(list.cursorList, page.next),
          previous: page.previous &&
            encodeCursor(list.cursorList, page.previous),
        },
      ),
    );
  };

  const listUsers: Handler<"listUsers"> = (c, { connection, list }) =>
    answer(c, connection, list, "users");
  const searchUsers: Handler<"searchUsers"> = (c, { connection, list }) =>
    answer(c, connection, list, "users");
  const listGroups: Handler<"listGroups"> = (c, { connection, list }) =>
    answer(c, connection, list, "groups");
  const searchGroups: Handler<"searchGroups"> = (c, { connection, list }) =>
    answer(c, connection, list, "groups");
  const searchAll: Handler<"searchAll"> = (c, { connection, list }) =>
    answer(c, connection, list, "all");

  return { listUsers, searchUsers, listGroups, searchGroups, searchAll };
}

const projectionOf = (list: ListRequest) => ({
  attributes: list.attributes,
  excluded: list.excludedAttributes,
});
