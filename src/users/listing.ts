import { USER_ID_MAX } from "./user.ts";

/**
 * The list's orders (`sort`): by creation time, by the canonical username
 * (the key its unique index orders, `username_fold`) or by the last sign-in,
 * `-` for the reverse; ties, and the order of users of one creation time,
 * by id. By last sign-in, users who never signed in come after the rest in
 * both directions (by id, in the sort's direction): "latest first" and
 * "longest ago first" both start with people who signed in.
 */
export const LIST_SORTS = [
  "createdAt",
  "-createdAt",
  "username",
  "-username",
  "lastLoginAt",
  "-lastLoginAt",
] as const;
export type ListSort = typeof LIST_SORTS[number];
export const DEFAULT_SORT: ListSort = "createdAt";

/**
 * A place in a list's order: a user's key in that order and id. The key is
 * a time (creation, last sign-in) in microseconds since the epoch (the
 * column's full precision, which the JSON's milliseconds lack), or the
 * canonical username; null for a user who has none: never signed in, or a
 * canonical key not written yet (a row an older release inserted: it sorts
 * after every keyed one, by id). A list "after" it holds the users that sort
 * after that user.
 */
export interface ListPosition {
  at: string | null;
  id: number;
}

/** What a cursor names: a place, and the order it is a place in. */
export interface ListCursor {
  sort: ListSort;
  position: ListPosition;
}

/**
 * The users' entity tags. Versions come from the database (migration 004):
 * a row's changes with every update of that user, the list's with every
 * write of any user. Both are microseconds of the clock kept increasing, so
 * a tag never comes back, even from a database made again from nothing.
 */
export const userTag = (id: number, version: string, expired = false) =>
  `"u${id}.${version}${expired ? EXPIRED : ""}"`;

/**
 * Marks the tag of a user whose disable ran out by itself: the detail
 * changed (`disabled` is null) while the row's version did not. If-Match
 * takes either tag for that version.
 */
const EXPIRED = ".e";

/** The largest version a row can have: the column is a 64-bit integer. */
const MAX_VERSION = 2n ** 63n - 1n;

/**
 * The versions of this user that an If-Match's strong tags name. Digits past
 * a 64-bit integer name none (the database would refuse to compare them).
 */
export function versionsOf(id: number, tags: string[]): string[] {
  const prefix = `"u${id}.`;
  return tags.flatMap((t) => {
    if (!t.startsWith(prefix)) return [];
    const quoted = t.slice(prefix.length, -1);
    const version = quoted.endsWith(EXPIRED)
      ? quoted.slice(0, -EXPIRED.length)
      : quoted;
    // Written as the service writes it: `"u14.05"` is not `"u14.5"`.
    return /^(?:0|[1-9][0-9]{0,18})$/.test(version) &&
        BigInt(version) <= MAX_VERSION
      ? [version]
      : [];
  });
}

export interface ListQuery {
  limit?: number;
  sort?: ListSort;
  after?: ListCursor;
  role?: string;
  status?: string;
  q?: string;
  username?: string;
  email?: string;
  include?: string;
  /** A limited caller's reach and its groups' versions (users.handlers.ts). */
  reach?: string;
}

/**
 * The tag of one list answer: the list's version and, for a filtered or
 * paged answer, a digest of what was asked, so a tag from one query never
 * validates another's answer.
 */
export function listTag(version: string, query: ListQuery): string {
  const asked = [
    query.limit,
    query.after?.position.at,
    query.after?.position.id,
    query.role,
    query.q,
    query.username,
    query.email,
    // Only when given, so the tags of queries without it stay as they were
    // (the default order is the list's answer without `sort`).
    ...(query.sort === undefined || query.sort === DEFAULT_SORT
      ? []
      : [`sort=${query.sort}`]),
    ...(query.status === undefined ? [] : [query.status]),
    ...(query.include === undefined ? [] : [`include=${query.include}`]),
    ...(query.reach === undefined ? [] : [query.reach]),
  ];
  if (asked.every((v) => v === undefined)) return `"l${version}"`;
  return `"l${version}.${fnv1a(JSON.stringify(asked))}"`;
}

/** 32-bit FNV-1a as hex: a cheap, stable digest (not a secret). */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

/**
 * The `after` cursor: opaque to clients, a place in an order to the
 * service. The default order's is `<microseconds>.<id>` (as before there
 * were others); another's `<sort>:<id>` and `:<key>` when there is one,
 * as UTF-8, in URL-safe base64.
 */
export function encodeCursor(
  p: ListPosition,
  sort: ListSort = DEFAULT_SORT,
): string {
  const text = sort === DEFAULT_SORT
    ? `${p.at}.${p.id}`
    : `${sort}:${p.id}${p.at === null ? "" : `:${p.at}`}`;
  const bytes = new TextEncoder().encode(text);
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-")
    .replaceAll("/", "_").replaceAll("=", "");
}

/** Long enough for any canonical username's key, which NFKC can lengthen. */
const CURSOR_MAX = 4096;

export function decodeCursor(cursor: string): ListCursor | undefined {
  if (!new RegExp(`^[A-Za-z0-9_-]{1,${CURSOR_MAX}}$`).test(cursor)) {
    return undefined;
  }
  let text: string;
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    text = new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(binary, (ch) => ch.charCodeAt(0)),
    );
  } catch {
    return undefined;
  }
  const old = /^(-?[0-9]{1,18})\.([0-9]{1,10})$/.exec(text);
  if (old) {
    const id = Number(old[2]);
    return microsecondsInRange(old[1]) && id <= USER_ID_MAX
      ? { sort: DEFAULT_SORT, position: { at: old[1], id } }
      : undefined;
  }
  const m =
    /^(-createdAt|username|-username|lastLoginAt|-lastLoginAt):([0-9]{1,10})(?::(.*))?$/s
      .exec(text);
  if (!m) return undefined;
  const sort = m[1] as ListSort;
  const id = Number(m[2]);
  const at = m[3] ?? null;
  if (id > USER_ID_MAX) return undefined;
  // A creation time is always there; a sign-in's may be absent (never
  // signed in), as a username's key; a time is a number.
  if (sort === "-createdAt" && at === null) return undefined;
  if (!sort.endsWith("username") && at !== null && !microsecondsInRange(at)) {
    return undefined;
  }
  return { sort, position: { at, id } };
}

/**
 * Whether `text` is microseconds since the epoch of a time PostgreSQL can
 * hold: eighteen digits stay below its last timestamp (294276 AD), not
 * always above its first.
 */
export function microsecondsInRange(text: string): boolean {
  return /^-?[0-9]{1,18}$/.test(text) &&
    BigInt(text) >= FIRST_TIMESTAMP_US;
}

/** PostgreSQL's first timestamp, 4714-11-24 00:00 UTC BC, in microseconds since 1970. */
const FIRST_TIMESTAMP_US = -210_866_803_200_000_000n;
