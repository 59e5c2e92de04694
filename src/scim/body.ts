/**
 * SCIM bodies read as the schemas define them: the attributes they know,
 * spelled as they spell them and typed as they type them. What the user and
 * group resources (user-resource.ts, group-resource.ts) build on.
 */
import { isScimRefusal, type ScimRefusal } from "../db/scim-types.ts";
import { refuse } from "../refusal.ts";
import { pastLimits } from "./limits.ts";
import {
  type AttrDef,
  ENTERPRISE_ATTRIBUTES,
  ENTERPRISE_SCHEMA,
  findAttr,
} from "./schema.ts";

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** `"True"`/`"False"` (as Entra sends them) and booleans; undefined otherwise. */
export function booleanOf(v: unknown): boolean | undefined {
  if (typeof v === "boolean") return v;
  if (typeof v === "string") {
    const lower = v.toLowerCase();
    if (lower === "true") return true;
    if (lower === "false") return false;
  }
  return undefined;
}

/**
 * A value as its definition types it: names spelled as the schema spells
 * them, sub-attributes no schema defines dropped, booleans sent as
 * `"True"`/`"False"` read as booleans; an empty list or object is no value
 * (unassigned, as RFC 7643 2.5 has it). A wrong type is refused.
 */
function typed(
  def: AttrDef & { element?: boolean },
  v: unknown,
  at: string,
): unknown | ScimRefusal {
  if (v === null) return undefined;
  if (def.multi) {
    if (!Array.isArray(v)) {
      return refuse("invalidValue", `${at} must be a list`);
    }
    const out: unknown[] = [];
    for (const [i, item] of v.entries()) {
      const one = typed(
        { ...def, multi: false, element: true },
        item,
        `${at}[${i}]`,
      );
      if (isScimRefusal(one)) return one;
      if (one !== undefined) out.push(one);
    }
    return out.length > 0 ? out : undefined;
  }
  switch (def.type) {
    case "complex": {
      // Entra sends a manager as its id alone: the value of the complex one.
      if (
        typeof v === "string" && !def.element &&
        findAttr(def.subs ?? [], "value")
      ) {
        return { value: v };
      }
      if (!isObject(v)) {
        return refuse("invalidValue", `${at} must be an object`);
      }
      const out: Json = {};
      for (const [key, value] of Object.entries(v)) {
        const sub = findAttr(def.subs ?? [], key);
        if (!sub) continue;
        const one = typed(sub, value, `${at}.${sub.name}`);
        if (isScimRefusal(one)) return one;
        if (one !== undefined) out[sub.name] = one;
      }
      return Object.keys(out).length > 0 ? out : undefined;
    }
    case "boolean": {
      const b = booleanOf(v);
      return b === undefined
        ? refuse("invalidValue", `${at} must be true or false`)
        : b;
    }
    default:
      return typeof v === "string"
        ? v
        : refuse("invalidValue", `${at} must be a string`);
  }
}

/**
 * The attributes of a body as the schemas define them, spelled as they
 * spell them; attributes no schema defines are left out (RFC 7644 3.3).
 */
function known(
  body: Json,
  defs: AttrDef[],
  at = "",
): Json | ScimRefusal {
  const out: Json = {};
  for (const [key, value] of Object.entries(body)) {
    if (key.toLowerCase() === ENTERPRISE_SCHEMA.toLowerCase()) {
      if (value === null) continue;
      if (!isObject(value)) {
        return refuse("invalidValue", `${ENTERPRISE_SCHEMA} must be an object`);
      }
      const ext = known(value, ENTERPRISE_ATTRIBUTES, `${ENTERPRISE_SCHEMA}:`);
      if (isScimRefusal(ext)) return ext;
      if (Object.keys(ext).length > 0) out[ENTERPRISE_SCHEMA] = ext;
      continue;
    }
    const def = findAttr(defs, key);
    if (!def) continue;
    const one = typed(def, value, at + def.name);
    if (isScimRefusal(one)) return one;
    if (one !== undefined) out[def.name] = one;
  }
  return out;
}

const text = (body: Json, name: string) => {
  const key = Object.keys(body).find((k) =>
    k.toLowerCase() === name.toLowerCase()
  );
  return key === undefined ? undefined : body[key];
};

/**
 * A body's `externalId` and the attributes the schemas `defs` define, or
 * the first refusal: not an object, a wrong type, a bound passed.
 */
export function readBody(
  body: unknown,
  defs: AttrDef[],
): { externalId: string | null | undefined; attrs: Json } | ScimRefusal {
  if (!isObject(body)) {
    return refuse("invalidSyntax", "the body must be a JSON object");
  }
  const externalId = text(body, "externalId");
  if (
    externalId !== undefined && externalId !== null &&
    typeof externalId !== "string"
  ) return refuse("invalidValue", "externalId must be a string");
  const over = pastLimits(body, defs);
  if (over) return over;
  const attrs = known(body, defs);
  if (isScimRefusal(attrs)) return attrs;
  return { externalId, attrs };
}
