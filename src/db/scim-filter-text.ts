/**
 * SCIM filters' comparisons of text (src/db/scim-filter.ts): each
 * operator as SQL over a column, the value a parameter; a `sw` also as a
 * range an index in byte order reads.
 */
import type { PendingQuery, Row, Sql } from "postgres";

type Fragment = PendingQuery<Row[]>;

/**
 * `exact`, a `sw` of `col` by `prefix`, as the range of keys in byte order
 * that start with it (collation "C", which an index of the column has:
 * migration 025), so the index reads those rows only.
 */
export function prefixRange(
  sql: Sql,
  col: Fragment,
  prefix: string,
  exact: Fragment,
): Fragment {
  if (prefix === "" || !prefix.isWellFormed()) return exact;
  const from = sql`${col} collate "C" >= ${prefix}::text`;
  const end = prefixEnd(prefix);
  return end === undefined
    ? sql`(${from} and ${exact})`
    : sql`(${from} and ${col} collate "C" < ${end}::text and ${exact})`;
}

/**
 * The least string after every string that starts with `prefix` in code
 * point order (UTF-8's byte order), if there is one: its last code point
 * that can grow, grown by one (past the surrogates, which UTF-8 has not).
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      return points.join("") +
        String.fromCodePoint(last + 1 === 0xd800 ? 0xe000 : last + 1);
    }
  }
  return undefined;
}

/** A comparison of text by `op`; undefined for an operator text has not. */
export function textOp(
  sql: Sql,
  col: Fragment,
  op: string,
  v: string,
  lowered = false,
): Fragment | undefined {
  const value = lowered ? sql`lower(${v}::text)` : sql`${v}::text`;
  switch (op) {
    case "eq":
      return sql`(${col} = ${value})`;
    case "ne":
      return sql`(${col} <> ${value})`;
    case "co":
      return sql`(strpos(${col}, ${value}) > 0)`;
    case "sw":
      return sql`(left(${col}, length(${value})) = ${value})`;
    case "ew":
      return sql`(right(${col}, length(${value})) = ${value})`;
    case "gt":
      return sql`(${col} > ${value} collate "C")`;
    case "ge":
      return sql`(${col} >= ${value} collate "C")`;
    case "lt":
      return sql`(${col} < ${value} collate "C")`;
    case "le":
      return sql`(${col} <= ${value} collate "C")`;
    default:
      return undefined;
  }
}
