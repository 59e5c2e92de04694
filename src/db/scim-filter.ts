/**
 * SCIM filters (RFC 7644 3.4.2.2) as SQL: the parsed expression (see
 * src/scim/filter.ts, which bounds its size and depth) compiled into a postgres.js fragment over the query's
 * rows, values always as parameters. Each attribute a filter may name has
 * one column expression and one type, which decides how values compare:
 * text regardless of case (`caseExact: false`), text exactly, booleans,
 * times, ids; `userName` under the canonical key (src/users/canonical.ts),
 * which its unique index answers for `eq`. Anything else is refused
 * (`invalidFilter`, thrown from within the expression's recursion).
 */
import type { PendingQuery, Row, Sql } from "postgres";
import type { Filter } from "scim2-parse-filter";
import { canonicalKey } from "../users/canonical.ts";
import { prefixRange, textOp } from "./scim-filter-text.ts";
import { refuse } from "../refusal.ts";

type Fragment = PendingQuery<Row[]>;

/** SQL text of our own (never input) as a fragment. */
const raw = (sql: Sql, text: string) => sql.unsafe(text) as unknown as Fragment;

type Kind = "ci" | "exact" | "canonical" | "boolean" | "time" | "id";

interface Attribute {
  kind: Kind;
  /** The column expression (SQL text of our own, never input). */
  column: string;
}

/** A multi-valued attribute: its elements (SQL text of our own) and their sub-attributes. */
interface Multi {
  elements: string;
  subs: Record<string, Attribute>;
  /**
   * The rows that may have an element whose `value` equals `v` regardless
   * of case, found by an index: a condition the exact one is added to, so
   * that `value eq` reads those rows only.
   */
  lookup?: (sql: Sql, v: string) => Fragment;
}

export interface Schema {
  attributes: Record<string, Attribute>;
  multi: Record<string, Multi>;
  /** The schema URN a path may start with. */
  urn: string;
}

/**
 * The users' filter: `u` the users row, `l` its link to the connection
 * (scim_user_links, left joined).
 */
export const USER_FILTER: Schema = {
  urn: "urn:ietf:params:scim:schemas:core:2.0:user:",
  attributes: {
    "id": { kind: "id", column: "u.id" },
    "username": { kind: "canonical", column: "u.username_fold" },
    "externalid": { kind: "exact", column: "l.external_id" },
    "active": {
      kind: "boolean",
      column:
        "(not (u.disabled_at is not null and (u.disabled_until is null or u.disabled_until > now())))",
    },
    "displayname": {
      kind: "ci",
      column: "coalesce(l.attributes->>'displayName', u.name)",
    },
    "name.formatted": {
      kind: "ci",
      column: "coalesce(l.attributes->'name'->>'formatted', u.name)",
    },
    "meta.created": { kind: "time", column: "u.created_at" },
    "meta.lastmodified": {
      kind: "time",
      column: "coalesce(u.modified_at, u.created_at)",
    },
  },
  multi: {
    "emails": {
      // The e-mails as sent, else the one the user has.
      elements: `jsonb_array_elements(case
        when jsonb_typeof(l.attributes->'emails') = 'array'
        then l.attributes->'emails'
        else jsonb_build_array(jsonb_build_object('value', u.email,
          'primary', true)) end) e`,
      // Migration 025: an address the user has, or one a link keeps.
      lookup: (sql, v) =>
        sql`u.id in (select id from users where lower(email) = lower(${v}::text)
          union all select user_id from scim_user_links
          where scim_email_values(attributes) @> array[lower(${v}::text)])`,
      subs: {
        "value": { kind: "ci", column: "(e->>'value')" },
        "type": { kind: "ci", column: "(e->>'type')" },
        "display": { kind: "ci", column: "(e->>'display')" },
        "primary": {
          kind: "boolean",
          column: "coalesce(e->>'primary' in ('true', 'True'), false)",
        },
      },
    },
  },
};

/** The groups' filter: `g` the scim_groups row. */
export const GROUP_FILTER: Schema = {
  urn: "urn:ietf:params:scim:schemas:core:2.0:group:",
  attributes: {
    "id": { kind: "id", column: "g.id" },
    "displayname": { kind: "ci", column: "g.display_name" },
    "externalid": { kind: "exact", column: "g.external_id" },
    "meta.created": { kind: "time", column: "g.created_at" },
    "meta.lastmodified": { kind: "time", column: "g.modified_at" },
  },
  multi: {
    "members": {
      elements: "scim_members m where m.group_id = g.id",
      subs: { "value": { kind: "id", column: "m.user_id" } },
    },
  },
};

const MAX_INT = 2 ** 31 - 1;

/** A path as `schema` names its attributes: lower case, its URN dropped. */
const nameIn = (schema: Schema, path: string) => {
  const p = path.toLowerCase();
  return p.startsWith(schema.urn) ? p.slice(schema.urn.length) : p;
};

/** Whether `schema` has the attribute (or, `multi`, the multi-valued one) a path names. */
function knows(schema: Schema, path: string, multi: boolean): boolean {
  const name = nameIn(schema, path);
  if (multi) return name in schema.multi;
  if (name in schema.attributes) return true;
  const dot = name.indexOf(".");
  const m = schema.multi[dot < 0 ? name : name.slice(0, dot)];
  return m !== undefined && (dot < 0 || name.slice(dot + 1) in m.subs);
}

/**
 * The SQL of a filter over `schema`'s rows; throws the refusal of a filter
 * that names an attribute or compares a value it cannot. A filter
 * across resource types (`others`: the other types' schemas) may name an
 * attribute only another type has: on these rows it has no value, so its
 * comparison is false (RFC 7644 3.4.2.2 applies a filter at the root to
 * every type).
 */
export function compileFilter(
  sql: Sql,
  schema: Schema,
  f: Filter,
  others: Schema[] = [],
): Fragment {
  const attr = (path: string) => nameIn(schema, path);
  const elsewhere = (path: string, multi: boolean) =>
    others.some((o) => knows(o, path, multi));

  /** Some element satisfies `body`; `value`: one it then has, which an index may find. */
  const within = (multi: Multi, body: Fragment, value?: string) => {
    const some = multi.elements.includes(" where ")
      ? sql`exists (select 1 from ${raw(sql, multi.elements)} and ${body})`
      : sql`exists (select 1 from ${raw(sql, multi.elements)} where ${body})`;
    return multi.lookup && value !== undefined
      ? sql`(${multi.lookup(sql, value)} and ${some})`
      : some;
  };

  const compile = (
    f: Filter,
    scope: Record<string, Attribute>,
    multis: Record<string, Multi>,
  ): Fragment => {
    switch (f.op) {
      case "and":
      case "or":
        return merged(f.filters).map((g) => compile(g, scope, multis)).reduce(
          (a, b) => f.op === "and" ? sql`(${a} and ${b})` : sql`(${a} or ${b})`,
        );
      case "not":
        return sql`(not coalesce(${compile(f.filter, scope, multis)}, false))`;
      case "[]": {
        const multi = multis[attr(f.attrPath)];
        if (
          !multi && scope === schema.attributes && elsewhere(f.attrPath, true)
        ) {
          return sql`false`;
        }
        if (!multi) {
          throw refuse("invalidFilter", `${f.attrPath} is not multi-valued`);
        }
        return within(
          multi,
          compile(f.valFilter, multi.subs, {}),
          valueEq(f.valFilter),
        );
      }
      default: {
        if (!isComparison(f)) throw refuse("invalidFilter", `unknown operator`);
        const name = attr(f.attrPath);
        const one = scope[name];
        if (one) return compare(sql, one, f);
        const dot = name.indexOf(".");
        const multi = multis[dot < 0 ? name : name.slice(0, dot)];
        const sub = multi &&
          (dot < 0 ? multi.subs["value"] : multi.subs[name.slice(dot + 1)]);
        if ((!multi || !sub) && scope === schema.attributes) {
          if (elsewhere(f.attrPath, false)) return sql`false`;
        }
        if (!multi || !sub) {
          throw refuse("invalidFilter", `unknown attribute ${f.attrPath}`);
        }
        return within(
          multi,
          compare(sql, sub, f),
          sub === multi.subs["value"] ? eqString(f) : undefined,
        );
      }
    }
  };
  // Unwrapped, so that an index answers a comparison (`userName eq`): a
  // null where a row is selected counts as false anyway.
  return compile(f, schema.attributes, schema.multi);
}

/**
 * The parser reads `emails[type eq "work"].value co "x"` as the value path
 * and a comparison of `emails.value` joined by `and`; it means one element
 * that satisfies both, so the two are merged into one value path.
 */
function merged(filters: Filter[]): Filter[] {
  const out: Filter[] = [];
  for (const f of filters) {
    const last = out.at(-1);
    if (
      last?.op === "[]" && isComparison(f) &&
      f.attrPath.toLowerCase().startsWith(last.attrPath.toLowerCase() + ".")
    ) {
      out[out.length - 1] = {
        op: "[]",
        attrPath: last.attrPath,
        valFilter: {
          op: "and",
          filters: [last.valFilter, {
            ...f,
            attrPath: f.attrPath.slice(last.attrPath.length + 1),
          }],
        },
      };
    } else out.push(f);
  }
  return out;
}

/** The string a comparison says its attribute equals, if it does. */
const eqString = (f: Filter) =>
  f.op === "eq" && typeof f.compValue === "string" ? f.compValue : undefined;

/** The string an element's `value` equals in a filter of elements (alone or in an `and`), if it says one. */
function valueEq(f: Filter): string | undefined {
  if (f.op === "and") {
    return f.filters.map(valueEq).find((v) => v !== undefined);
  }
  return isComparison(f) && f.attrPath.toLowerCase() === "value"
    ? eqString(f)
    : undefined;
}

type Comparison = Extract<Filter, { compValue: unknown } | { op: "pr" }>;

const isComparison = (f: Filter): f is Comparison =>
  f.op !== "and" && f.op !== "or" && f.op !== "not" && f.op !== "[]";

const ORDER: Record<string, string | undefined> = {
  gt: ">",
  ge: ">=",
  lt: "<",
  le: "<=",
  eq: "=",
  ne: "<>",
};

function compare(sql: Sql, a: Attribute, f: Comparison): Fragment {
  const col = raw(sql, a.column);
  if (f.op === "pr") {
    return a.kind === "ci" || a.kind === "exact"
      ? sql`(${col} is not null and ${col} <> '')`
      : sql`(${col} is not null)`;
  }
  const v = f.compValue;
  if (v === null) {
    if (f.op === "eq") return sql`(${col} is null)`;
    if (f.op === "ne") return sql`(${col} is not null)`;
    throw refuse("invalidFilter", `null compares only with eq or ne`);
  }
  const op = f.op;
  switch (a.kind) {
    case "boolean": {
      if (typeof v !== "boolean") {
        throw refuse(
          "invalidFilter",
          `${f.attrPath} compares with true or false`,
        );
      }
      if (op !== "eq" && op !== "ne") {
        throw refuse(
          "invalidFilter",
          `${f.attrPath} compares with eq or ne only`,
        );
      }
      return op === "eq" ? sql`(${col} = ${v})` : sql`(${col} <> ${v})`;
    }
    case "time": {
      const at = typeof v === "string" ? Date.parse(v) : NaN;
      // Outside them the ISO form (`+010000-…`, `-000001-…`) is none PostgreSQL reads.
      const year = Number.isNaN(at) ? NaN : new Date(at).getUTCFullYear();
      if (!(year >= 1 && year <= 9999)) {
        throw refuse(
          "invalidFilter",
          `${f.attrPath} compares with a date and time of years 1 to 9999`,
        );
      }
      const sign = ORDER[op];
      if (!sign) throw refuse("invalidFilter", `${op} does not compare times`);
      const iso = new Date(at).toISOString();
      // Times are shown to the millisecond: compared so too.
      return sql`(date_trunc('milliseconds', ${col}) ${
        raw(sql, sign)
      } ${iso}::timestamptz)`;
    }
    case "id": {
      if (typeof v !== "string" && typeof v !== "number") {
        throw refuse("invalidFilter", `${f.attrPath} compares with an id`);
      }
      const text = String(v);
      const sign = ORDER[op];
      if (sign) {
        const n = /^[0-9]{1,10}$/.test(text) ? Number(text) : NaN;
        if (Number.isNaN(n) || n > MAX_INT) {
          // An id that cannot exist: equal to none, unequal to all.
          if (op === "eq") return sql`false`;
          if (op === "ne") return sql`true`;
          throw refuse("invalidFilter", `${f.attrPath} ${op} needs a number`);
        }
        return sql`(${col} ${raw(sql, sign)} ${n}::int)`;
      }
      return known(textOp(sql, sql`${col}::text`, op, text), op);
    }
    default: {
      if (typeof v !== "string") {
        throw refuse("invalidFilter", `${f.attrPath} compares with a string`);
      }
      if (a.kind === "canonical") {
        const key = canonicalKey(v);
        const exact = known(textOp(sql, col, op, key), op);
        return op === "sw" ? prefixRange(sql, col, key, exact) : exact;
      }
      if (a.kind === "ci") {
        return known(
          textOp(sql, sql`lower(${col})`, op, v.toLowerCase(), true),
          op,
        );
      }
      return known(textOp(sql, col, op, v), op);
    }
  }
}

function known(compared: Fragment | undefined, op: string): Fragment {
  if (!compared) throw refuse("invalidFilter", `unknown operator ${op}`);
  return compared;
}
