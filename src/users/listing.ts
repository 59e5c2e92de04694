import { USER_ID_MAX } from "./user.ts";

/**
 * A place in the list's order: a user's creation time in microseconds since
 * the epoch (the column's full precision, which the JSON's milliseconds lack)
 * and id. A list "after" it holds the users that sort after that user.
 */
export interface ListPosition {
  at: string;
  id: number;
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
  after?: ListPosition;
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
    query.after?.at,
    query.after?.id,
    query.role,
    query.q,
    query.username,
    query.email,
    // Only when given, so the tags of queries without it stay as they were.
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

/** The `after` cursor: opaque to clients, a list position to the service. */
export function encodeCursor(p: ListPosition): string {
  return btoa(`${p.at}.${p.id}`).replaceAll("+", "-").replaceAll("/", "_")
    .replaceAll("=", "");
}

export function decodeCursor(cursor: string): ListPosition | undefined {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cursor)) return undefined;
  let text: string;
  try {
    text = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    return undefined;
  }
  const m = /^(-?[0-9]{1,18})\.([0-9]{1,10})$/.exec(text);
  if (!m || !microsecondsInRange(m[1])) return undefined;
  const id = Number(m[2]);
  return id <= USER_ID_MAX ? { at: m[1], id } : undefined;
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
