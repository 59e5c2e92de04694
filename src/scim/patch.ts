/**
 * SCIM PATCH (RFC 7644 3.5.2) applied to a resource's JSON: every
 * operation in order on a copy, so a refusal of any leaves the resource as it
 * was; the store writes the result in one transaction (all or nothing).
 * Takes what Okta and Entra send: operation names in any case, `replace`
 * and `add` without `path` and an object value (whose keys may be paths),
 * value-path filters, `add`/`replace` on a missing filtered value as a
 * creation (Entra), `remove` of a missing value as a no-op, `members`
 * removed by a value list (Entra) or a filter (Okta). A `remove` unassigns
 * (RFC 7644 3.5.2.2), except what the resource cannot be without.
 */
import type { Filter } from "scim2-parse-filter";
import type { ScimRefusal } from "../db/scim.ts";
import { isObject, type Json } from "./body.ts";
import { refuse } from "../refusal.ts";
import { elementTest, seeded } from "./element-filter.ts";
import { isRefusal, parseFilter } from "./filter.ts";
import { OPERATIONS_MAX, pastLimits } from "./limits.ts";
import {
  type AttrDef,
  COMMON_READ_ONLY,
  ENTERPRISE_ATTRIBUTES,
  ENTERPRISE_SCHEMA,
  findAttr,
  GROUP_SCHEMA,
  USER_SCHEMA,
} from "./schema.ts";

export interface PatchOperation {
  op: string;
  path?: string;
  value?: unknown;
}

/** A path taken apart: the attribute (in its container), an element filter, a sub-attribute. */
interface Path {
  /** The extension's object holds the attribute (enterprise), else the resource. */
  extension?: string;
  def: AttrDef;
  filter?: Filter;
  sub?: AttrDef;
}

const PATH =
  /^(?<attr>[A-Za-z$][\w$-]*)(?:\[(?<filter>.*)\])?(?:\.(?<sub>[A-Za-z$][\w$-]*))?$/s;

function parsePath(
  raw: string,
  defs: AttrDef[],
  core: string,
): Path | ScimRefusal {
  let path = raw.trim();
  let extension: string | undefined;
  let scope = defs;
  const lower = path.toLowerCase();
  if (lower.startsWith(ENTERPRISE_SCHEMA.toLowerCase() + ":")) {
    extension = ENTERPRISE_SCHEMA;
    scope = ENTERPRISE_ATTRIBUTES;
    path = path.slice(ENTERPRISE_SCHEMA.length + 1);
  } else if (lower.startsWith(core.toLowerCase() + ":")) {
    path = path.slice(core.length + 1);
  }
  const m = PATH.exec(path);
  if (!m?.groups) return refuse("invalidPath", `${raw} is not a valid path`);
  const { attr, filter, sub } = m.groups;
  if (!extension && COMMON_READ_ONLY.has(attr.toLowerCase())) {
    return refuse("mutability", `${attr} cannot be changed`);
  }
  const def = findAttr(scope, attr);
  if (!def) return refuse("invalidPath", `${raw} names no attribute`);
  if (def.name === "groups") {
    return refuse(
      "mutability",
      "groups is read-only: change the group's members",
    );
  }
  let parsed: Path["filter"];
  if (filter !== undefined) {
    if (!def.multi) {
      return refuse("invalidPath", `${def.name} is not multi-valued`);
    }
    const read = parseFilter(filter, raw);
    if (isRefusal(read)) return read;
    parsed = read;
  }
  let subDef: AttrDef | undefined;
  if (sub !== undefined) {
    subDef = findAttr(def.subs ?? [], sub);
    if (!subDef) return refuse("invalidPath", `${raw} names no attribute`);
  }
  return { extension, def, filter: parsed, sub: subDef };
}

/** The object that holds the path's attribute, made when `create`. */
function container(res: Json, p: Path, create: boolean): Json | undefined {
  if (!p.extension) return res;
  const key = Object.keys(res).find((k) =>
    k.toLowerCase() === p.extension!.toLowerCase()
  );
  if (key && isObject(res[key])) return res[key] as Json;
  if (!create) return undefined;
  const made: Json = {};
  res[p.extension] = made;
  return made;
}

/** The value under a name, without regard to case; its key too. */
function entry(o: Json, name: string): [string, unknown] | undefined {
  const key = Object.keys(o).find((k) =>
    k.toLowerCase() === name.toLowerCase()
  );
  return key === undefined ? undefined : [key, o[key]];
}

function put(o: Json, name: string, value: unknown) {
  const found = entry(o, name);
  if (found && found[0] !== name) delete o[found[0]];
  o[name] = value;
}

function drop(o: Json, name: string) {
  const found = entry(o, name);
  if (found) delete o[found[0]];
}

/**
 * The operations applied to a copy of `resource`, or the first refusal.
 * `core`: the resource's schema URN, which a path may start with.
 */
export function applyPatch(
  resource: Json,
  operations: unknown,
  defs: AttrDef[],
): Json | ScimRefusal {
  const core = defs.some((d) => d.name === "userName")
    ? USER_SCHEMA
    : GROUP_SCHEMA;
  if (!Array.isArray(operations) || operations.length === 0) {
    return refuse("invalidSyntax", "Operations must be a non-empty array");
  }
  if (operations.length > OPERATIONS_MAX) {
    return refuse(
      "invalidSyntax",
      `Operations holds at most ${OPERATIONS_MAX} operations`,
    );
  }
  const res: Json = structuredClone(resource);
  for (const [i, raw] of operations.entries()) {
    if (!isObject(raw)) {
      return refuse("invalidSyntax", `Operations[${i}] must be an object`);
    }
    const opEntry = entry(raw, "op");
    const op = typeof opEntry?.[1] === "string"
      ? opEntry[1].toLowerCase()
      : undefined;
    if (op !== "add" && op !== "replace" && op !== "remove") {
      return refuse(
        "invalidSyntax",
        `Operations[${i}].op must be add, remove or replace`,
      );
    }
    const path = entry(raw, "path")?.[1];
    const value = entry(raw, "value")?.[1];
    if (path !== undefined && typeof path !== "string") {
      return refuse("invalidPath", `Operations[${i}].path must be a string`);
    }
    const result = path === undefined || path === ""
      ? withoutPath(res, op, value, defs, core)
      : atPath(res, op, path, value, defs, core);
    if (result) return result;
    // Checked as each operation ends, so that later ones never scan a list
    // past the bound.
    const over = pastLimits(res, defs);
    if (over) return over;
  }
  return unassignedRequired(resource, res, defs) ?? res;
}

/**
 * Whether `v` assigns the attribute: a multi-valued one needs an element
 * with every required sub-attribute (an e-mail needs its address).
 */
function assigned(def: AttrDef, v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === "string") return v.trim() !== "";
  if (def.multi) {
    const needed = (def.subs ?? []).filter((s) => s.required);
    return Array.isArray(v) &&
      v.some((el) =>
        isObject(el) && needed.every((s) => assigned(s, entry(el, s.name)?.[1]))
      );
  }
  return !isObject(v) || Object.keys(v).length > 0;
}

/**
 * A PATCH leaves assigned what the resource cannot be without: the required
 * attributes (userName, the e-mail, a group's displayName) and `active`,
 * since an account is enabled or disabled, never neither. Checked on the
 * result, so that a value removed and another added in one PATCH replace it.
 */
function unassignedRequired(
  before: Json,
  after: Json,
  defs: AttrDef[],
): ScimRefusal | undefined {
  for (const def of defs) {
    if (!def.required && def.name !== "active") continue;
    if (
      assigned(def, entry(before, def.name)?.[1]) &&
      !assigned(def, entry(after, def.name)?.[1])
    ) return refuse("invalidValue", `${def.name} cannot be removed`);
  }
  return undefined;
}

function withoutPath(
  res: Json,
  op: "add" | "replace" | "remove",
  value: unknown,
  defs: AttrDef[],
  core: string,
): ScimRefusal | undefined {
  if (op === "remove") {
    return refuse("noTarget", "remove needs a path");
  }
  if (!isObject(value)) {
    return refuse("invalidValue", `${op} without a path needs an object value`);
  }
  for (const [key, v] of Object.entries(value)) {
    const lower = key.toLowerCase();
    if (lower === "schemas" || lower === "meta" || lower === "id") continue;
    if (lower === ENTERPRISE_SCHEMA.toLowerCase() && isObject(v)) {
      for (const [k, x] of Object.entries(v)) {
        const f = atPath(res, op, `${ENTERPRISE_SCHEMA}:${k}`, x, defs, core);
        if (f) return f;
      }
      continue;
    }
    if (lower === "externalid") {
      put(res, "externalId", v);
      continue;
    }
    // Attributes no schema defines are ignored here, as in a PUT body.
    const head = lower.startsWith(core.toLowerCase() + ":")
      ? lower.slice(core.length + 1)
      : lower;
    const isExt = lower.startsWith(ENTERPRISE_SCHEMA.toLowerCase() + ":");
    if (!isExt && !findAttr(defs, head.split(/[.[]/)[0])) continue;
    const f = atPath(res, op, key, v, defs, core);
    if (f) return f;
  }
  return undefined;
}

function atPath(
  res: Json,
  op: "add" | "replace" | "remove",
  raw: string,
  value: unknown,
  defs: AttrDef[],
  core: string,
): ScimRefusal | undefined {
  if (raw.toLowerCase() === "externalid") {
    if (op === "remove") drop(res, "externalId");
    else put(res, "externalId", value);
    return undefined;
  }
  const p = parsePath(raw, defs, core);
  if (isRefusal(p)) return p;
  const holder = container(res, p, op !== "remove");
  if (!holder) return undefined; // removing from an extension not there
  const name = p.def.name;
  const current = entry(holder, name)?.[1];

  if (p.filter) {
    const list = Array.isArray(current) ? current : [];
    const hit = list.filter(elementTest(p.filter));
    if (op === "remove") {
      if (p.sub) hit.forEach((el) => drop(el as Json, p.sub!.name));
      else {
        const gone = new Set(hit);
        put(holder, name, list.filter((el) => !gone.has(el)));
      }
      return undefined;
    }
    if (hit.length === 0) {
      // Entra sends add/replace to a filtered value that is not there yet.
      const made = seeded(p.filter);
      if (p.sub) made[p.sub.name] = value;
      else if (isObject(value)) Object.assign(made, value);
      else return refuse("invalidValue", `${raw} needs an object value`);
      put(holder, name, [...list, made]);
      return undefined;
    }
    for (const el of hit) {
      if (p.sub) put(el as Json, p.sub.name, value);
      else if (isObject(value)) Object.assign(el as Json, value);
      else return refuse("invalidValue", `${raw} needs an object value`);
    }
    return undefined;
  }

  if (p.sub) {
    if (p.def.multi) {
      // `emails.value`: every element's sub-attribute.
      const list = Array.isArray(current) ? current : [];
      if (op === "remove") {
        list.forEach((el) => isObject(el) && drop(el, p.sub!.name));
      } else if (list.length === 0) {
        put(holder, name, [{ [p.sub.name]: value }]);
      } else list.forEach((el) => isObject(el) && put(el, p.sub!.name, value));
      return undefined;
    }
    const obj = isObject(current) ? current : {};
    if (op === "remove") drop(obj, p.sub.name);
    else put(obj, p.sub.name, value);
    put(holder, name, obj);
    return undefined;
  }

  if (op === "remove") {
    if (p.def.multi && value !== undefined && Array.isArray(current)) {
      // Entra removes members by listing them as the value.
      const gone = new Set(
        (Array.isArray(value) ? value : [value]).map((v) =>
          isObject(v) ? String(v.value) : String(v)
        ),
      );
      put(
        holder,
        name,
        current.filter((el) => !(isObject(el) && gone.has(String(el.value)))),
      );
      return undefined;
    }
    drop(holder, name);
    return undefined;
  }
  if (p.def.multi) {
    const items = value === null ? [] : Array.isArray(value) ? value : [value];
    if (op === "replace") {
      put(holder, name, items);
      return undefined;
    }
    const list = Array.isArray(current) ? [...current] : [];
    // An element of the same value is there already: not added twice.
    const values = new Set(
      list.flatMap((el) =>
        isObject(el) && el.value !== undefined ? [String(el.value)] : []
      ),
    );
    for (const item of items) {
      const value = isObject(item) && item.value !== undefined
        ? String(item.value)
        : undefined;
      if (value !== undefined && values.has(value)) continue;
      if (value !== undefined) values.add(value);
      list.push(item);
    }
    put(holder, name, list);
    return undefined;
  }
  if (p.def.type === "complex" && isObject(value) && isObject(current)) {
    // add and replace of a complex value set the sub-attributes given.
    put(holder, name, { ...current, ...value });
    return undefined;
  }
  put(holder, name, value);
  return undefined;
}
