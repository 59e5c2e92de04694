/**
 * Cursor pagination (RFC 9865): a cursor names a place in one list (the
 * sort key and id of the row a page ended or began at) and the list it
 * was made for. A page from it is a keyset read in index order, so a walk
 * returns every resource that exists from its start to its end exactly
 * once, whatever is created or deleted meanwhile. A cursor is not a
 * secret: it holds nothing its pages did not show, is at most
 * CURSOR_MAX_LENGTH characters, and one the service did not make in that
 * form, for that list (connection, filter, sort) and within
 * CURSOR_TIMEOUT_SECONDS, is refused.
 */
import { Buffer } from "node:buffer";
import type { Keyset, ListAfter, SortKeyKind } from "../db/scim-list.ts";
import { unstorableText } from "../http/body-text.ts";
import { microsecondsInRange } from "../users/listing.ts";
import { listKey } from "./list-cache.ts";

/** How long a cursor serves (`cursorTimeout`). */
export const CURSOR_TIMEOUT_SECONDS = 3600;
/** The longest cursor the service reads: one of the longest key it makes fits. */
export const CURSOR_MAX_LENGTH = 8192;
/**
 * A sort key's most bytes of UTF-8: a userName's canonical key (254
 * characters, each folding to at most three) or a group's name stays below.
 */
const KEY_MAX_BYTES = 4096;
/** How far another instance's clock may run ahead of this one's. */
const CLOCK_SKEW_SECONDS = 300;
const MAX_ID = 2 ** 31 - 1;

/** A place in a list of segments (Users, then Groups at the root). */
export interface Place extends ListAfter {
  segment: number;
}

/** Where a page starts: after `at` or, `back`, before it (null: the list's start or end). */
export interface Cursor {
  at: Place | null;
  back: boolean;
}

/** What a cursor is made for: its list, and how each segment keys its places. */
export interface CursorList {
  /** The list's identity: connection, resource types, filter, sort. */
  parts: unknown[];
  keyKinds: SortKeyKind[];
}

/** The digest a cursor carries of its list: one list's cursors never serve another. */
const bindingOf = (list: CursorList) => listKey(...list.parts).slice(0, 16);

const nowSeconds = () => Math.floor(Date.now() / 1000);

export function encodeCursor(list: CursorList, c: Cursor): string {
  const fields = [
    bindingOf(list),
    nowSeconds(),
    c.back ? 1 : 0,
    ...c.at ? [c.at.segment, c.at.key, c.at.id] : [null],
  ];
  return Buffer.from(JSON.stringify(fields)).toString("base64url");
}

const keyFits = (kind: SortKeyKind, key: unknown) =>
  kind === "none"
    ? key === null
    : kind === "time"
    ? typeof key === "string" && microsecondsInRange(key)
    : typeof key === "string" && Buffer.byteLength(key) <= KEY_MAX_BYTES &&
      unstorableText(key) === undefined;

/**
 * The cursor a client sent, or why it cannot serve: `invalidCursor`
 * (not one the service made in this form, or made for another list),
 * `expiredCursor` (older than CURSOR_TIMEOUT_SECONDS). An empty one is the
 * first page.
 */
export function decodeCursor(
  text: string,
  list: CursorList,
): Cursor | "invalidCursor" | "expiredCursor" {
  if (text === "") return { at: null, back: false };
  if (text.length > CURSOR_MAX_LENGTH || !/^[A-Za-z0-9_-]+$/.test(text)) {
    return "invalidCursor";
  }
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(text, "base64url").toString());
  } catch {
    return "invalidCursor";
  }
  // Only the service's own spelling: what decodes loosely is refused.
  if (
    !Array.isArray(fields) ||
    Buffer.from(JSON.stringify(fields)).toString("base64url") !== text
  ) return "invalidCursor";
  const [binding, issued, back, segment, key, id] = fields;
  if (binding !== bindingOf(list)) return "invalidCursor";
  if (!Number.isSafeInteger(issued) || (back !== 0 && back !== 1)) {
    return "invalidCursor";
  }
  const age = nowSeconds() - (issued as number);
  if (age < -CLOCK_SKEW_SECONDS) return "invalidCursor";
  if (fields.length === 4 && segment === null) {
    return age > CURSOR_TIMEOUT_SECONDS
      ? "expiredCursor"
      : { at: null, back: back === 1 };
  }
  const kind = Number.isInteger(segment)
    ? list.keyKinds[segment as number]
    : undefined;
  if (
    fields.length !== 6 || kind === undefined || !keyFits(kind, key) ||
    !Number.isInteger(id) || (id as number) < 1 || (id as number) > MAX_ID
  ) return "invalidCursor";
  if (age > CURSOR_TIMEOUT_SECONDS) return "expiredCursor";
  return {
    at: {
      segment: segment as number,
      key: key as string | null,
      id: id as number,
    },
    back: back === 1,
  };
}

/** One resource type of a list: its rows from a place, in list order. */
export type Segment<R> = (
  from: Keyset,
  limit: number,
) => Promise<(R & { id: number; sortKey: string | null })[]>;

/** A page read from a cursor, and the cursors of the pages beside it. */
export interface CursorPage<R> {
  rows: { segment: number; row: R }[];
  /** Absent on the last page. */
  next?: Cursor;
  /** Absent on the first page. */
  previous?: Cursor;
}

/**
 * Up to `count` rows from the cursor's place across `segments` in order,
 * each read from its place in index order; one row more than the page
 * tells whether a page follows (or, going back, precedes).
 */
export async function cursorPage<R>(
  segments: Segment<R>[],
  cursor: Cursor,
  count: number,
): Promise<CursorPage<R>> {
  const placeOf = (
    r: { segment: number; row: { id: number; sortKey: string | null } },
  ): Place => ({ segment: r.segment, key: r.row.sortKey, id: r.row.id });
  const got: {
    segment: number;
    row: R & { id: number; sortKey: string | null };
  }[] = [];
  const step = cursor.back ? -1 : 1;
  let at: ListAfter | null = cursor.at;
  for (
    let s = cursor.at?.segment ?? (cursor.back ? segments.length - 1 : 0);
    s >= 0 && s < segments.length && got.length <= count;
    s += step, at = null
  ) {
    const rows =
      (await segments[s]({ at, back: cursor.back }, count + 1 - got.length))
        .map((row) => ({ segment: s, row }));
    if (cursor.back) got.unshift(...rows);
    else got.push(...rows);
  }
  const more = got.length > count;
  if (!cursor.back) {
    const shown = got.slice(0, count);
    return {
      rows: shown,
      ...more && { next: { at: placeOf(shown.at(-1)!), back: false } },
      ...cursor.at && shown.length > 0 &&
        { previous: { at: placeOf(shown[0]), back: true } },
    };
  }
  const shown = got.slice(more ? got.length - count : 0);
  return {
    rows: shown,
    // Nothing left before the place: the next page is the list's first.
    next: {
      at: shown.length > 0 ? placeOf(shown.at(-1)!) : null,
      back: false,
    },
    ...more && { previous: { at: placeOf(shown[0]), back: true } },
  };
}
