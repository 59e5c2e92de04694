/**
 * A SCIM list's parameters (RFC 7644 3.4.2, RFC 9865), from the query of a
 * GET or the body of a `POST .search`: the filter compiled to SQL by the
 * store for each resource type listed, the sort, the page by `startIndex`
 * or by `cursor`, and `attributes`/`excludedAttributes`.
 */
import { z } from "@hono/zod-openapi";
import type { Filter } from "scim2-parse-filter";
import type { ScimWhere } from "../db/scim.ts";
import {
  type GroupSort,
  groupSortKeyKind,
  type UserSort,
  userSortKeyKind,
} from "../db/scim-list.ts";
import { MSG } from "../http/messages.ts";
import { passes } from "../http/steps.ts";
import { type Cursor, type CursorList, decodeCursor } from "./cursor.ts";
import { scimCheck, scimError, scimRefused } from "./errors.ts";
import { parseFilter } from "./filter.ts";
import { isRefusal, type Refusal, refuse, refusedFor } from "../refusal.ts";
import { invalidFilter } from "./steps.ts";

/** The largest `count` a list answers; more is capped. */
export const COUNT_MAX = 1000;
export const COUNT_DEFAULT = 100;

/** What a list lists: one resource type, or both (`POST /scim/v2/.search`). */
export type ListKind = "users" | "groups" | "all";

const badListParameter = scimCheck(
  400,
  MSG.scimInvalidValue,
  "`startIndex` or `count` is not an integer, or `sortOrder` is neither `ascending` nor `descending`",
);
const invalidCursor = scimCheck(
  400,
  MSG.scimInvalidCursor,
  "`cursor` is not one the service gave (`nextCursor`, `previousCursor`), or was given for another list: another filter, sort or resource type",
);
const expiredCursor = scimCheck(
  400,
  MSG.scimExpiredCursor,
  "`cursor` was given more than `cursorTimeout` (3600) seconds ago",
);

/** A list request's parameters, from the query (GET) or the body (`POST .search`). */
export interface ListParams {
  filter?: Filter;
  startIndex: number;
  count: number;
  sortBy?: string;
  descending: boolean;
  attributes?: string[];
  excludedAttributes?: string[];
  /** The cursor as sent: a page by cursor ("" for the first), checked last. */
  cursor?: unknown;
}

/** The list as its handler reads it. */
export interface ListRequest extends ListParams {
  /** The filter compiled for each resource type listed. */
  where: { users?: ScimWhere; groups?: ScimWhere };
  userSort: UserSort;
  groupSort: GroupSort;
  /** The list its cursors are made for. */
  cursorList: CursorList;
  /** A page by cursor (RFC 9865); without it, by `startIndex`. */
  page?: Cursor;
}

const USER_SORTS: Record<string, UserSort> = {
  "username": "userName",
  "meta.created": "meta.created",
  "meta.lastmodified": "meta.lastModified",
};
const GROUP_SORTS: Record<string, GroupSort> = {
  "displayname": "displayName",
  "meta.created": "meta.created",
  "meta.lastmodified": "meta.lastModified",
};

const commaList = (v: unknown) =>
  typeof v === "string"
    ? v.split(",").map((s) => s.trim()).filter(Boolean)
    : Array.isArray(v)
    ? v.filter((s): s is string => typeof s === "string")
    : undefined;

/**
 * The list's parameters. `startIndex` below 1 counts as 1 and `count`
 * below 0 as 0 (RFC 7644 3.4.2.4); `count` above 1000 is 1000.
 */
function listParams(
  input: Record<string, unknown>,
): ListParams | Refusal<"invalidFilter" | "invalidValue"> {
  const get = (name: string) => {
    const key = Object.keys(input).find((k) =>
      k.toLowerCase() === name.toLowerCase()
    );
    return key === undefined ? undefined : input[key];
  };
  const int = (name: string, fallback: number) => {
    const v = get(name);
    if (v === undefined || v === "") return fallback;
    const n = typeof v === "number" ? v : Number(v);
    return Number.isSafeInteger(n) ? n : undefined;
  };
  const startIndex = int("startIndex", 1);
  if (startIndex === undefined) {
    return refuse("invalidValue", "startIndex must be an integer");
  }
  const count = int("count", COUNT_DEFAULT);
  if (count === undefined) {
    return refuse("invalidValue", "count must be an integer");
  }
  const sortOrder = get("sortOrder");
  if (
    sortOrder !== undefined && sortOrder !== "ascending" &&
    sortOrder !== "descending"
  ) {
    return refuse(
      "invalidValue",
      "sortOrder must be ascending or descending",
    );
  }
  const sortBy = get("sortBy");
  if (sortBy !== undefined && typeof sortBy !== "string") {
    return refuse("invalidValue", "sortBy must be a string");
  }
  const rawFilter = get("filter");
  let filter: Filter | undefined;
  if (rawFilter !== undefined && rawFilter !== "") {
    if (typeof rawFilter !== "string") {
      return refuse("invalidFilter", "filter must be a string");
    }
    const parsed = parseFilter(rawFilter);
    if (isRefusal(parsed)) return parsed;
    filter = parsed;
  }
  return {
    filter,
    startIndex: Math.max(1, startIndex),
    count: Math.min(COUNT_MAX, Math.max(0, count)),
    sortBy: sortBy || undefined,
    descending: sortOrder === "descending",
    attributes: commaList(get("attributes")),
    excludedAttributes: commaList(get("excludedAttributes")),
    cursor: get("cursor"),
  };
}

/**
 * The list's parameters, its filter compiled for the rows of each type
 * `kind` lists, and the page its cursor names. A filter across both types
 * may name an attribute of either.
 */
export const listQuery = (kind: ListKind, from: "query" | "body") =>
  passes<"list", ListRequest>(
    "list",
    [badListParameter, invalidFilter, invalidCursor, expiredCursor],
    (c, { deps, got }) => {
      const input = from === "query"
        ? c.req.query()
        : got.body as Record<string, unknown>;
      const params = listParams(input);
      if (isRefusal(params)) return scimRefused(c, params);
      const where: ListRequest["where"] = {};
      if (params.filter) {
        try {
          for (const k of ["users", "groups"] as const) {
            if (kind === k || kind === "all") {
              where[k] = deps.store.scim.filter(
                k,
                params.filter,
                kind === "all",
              );
            }
          }
        } catch (e) {
          if (!refusedFor(e, ["invalidFilter"])) throw e;
          return scimRefused(c, e);
        }
      }
      const sortBy = params.sortBy?.toLowerCase() ?? "";
      const userSort = USER_SORTS[sortBy] ?? "id";
      const groupSort = GROUP_SORTS[sortBy] ?? "id";
      const connection = got.connection as { id: number };
      const cursorList: CursorList = {
        parts: [
          kind,
          connection.id,
          params.filter ?? null,
          kind === "groups" ? groupSort : userSort,
          kind === "all" ? groupSort : null,
          params.descending,
        ],
        keyKinds: [
          ...kind !== "groups" ? [userSortKeyKind(userSort)] : [],
          ...kind !== "users" ? [groupSortKeyKind(groupSort)] : [],
        ],
      };
      const list = { ...params, where, userSort, groupSort, cursorList };
      if (params.cursor === undefined) return list;
      const page = typeof params.cursor === "string"
        ? decodeCursor(params.cursor, cursorList)
        : "invalidCursor";
      if (page === "invalidCursor") {
        return scimError(c, 400, MSG.scimInvalidCursor);
      }
      if (page === "expiredCursor") {
        return scimError(c, 400, MSG.scimExpiredCursor);
      }
      return { ...list, page };
    },
    from === "query" ? { query: LIST_QUERY } : undefined,
  );

const LIST_QUERY = z.object({
  filter: z.string().optional().openapi({
    description:
      'RFC 7644 filter: `eq ne co sw ew pr gt ge lt le`, `and or not`, parentheses, value paths (`emails[type eq "work"].value`)',
    example: 'userName eq "alice@example.com"',
  }),
  startIndex: z.string().optional().openapi({
    type: "integer",
    description: "1-based; below 1 counts as 1. Not read with `cursor`",
    example: 1,
  }),
  cursor: z.string().optional().openapi({
    description:
      "Pages by cursor (RFC 9865): empty for the first page, then an answer's `nextCursor` or `previousCursor` (valid for 3600 seconds, with the same filter and sort)",
  }),
  count: z.string().optional().openapi({
    type: "integer",
    description:
      "Default 100, at most 1000 (more is capped); 0: totalResults only",
    example: 100,
  }),
  sortBy: z.string().optional().openapi({
    description:
      "`userName`, `meta.created` or `meta.lastModified` (Groups: `displayName`, `meta.created`, `meta.lastModified`)",
  }),
  sortOrder: z.enum(["ascending", "descending"]).optional(),
  attributes: z.string().optional().openapi({
    description: "Comma-separated attributes to return (and `id`, `schemas`)",
  }),
  excludedAttributes: z.string().optional().openapi({
    description: "Comma-separated attributes to leave out",
  }),
});
