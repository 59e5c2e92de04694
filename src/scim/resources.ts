/**
 * Users and groups as SCIM resources, and SCIM bodies as users and groups:
 * the mapping decisions.md settles (userName, the name, the primary e-mail,
 * active, password, externalId, the attributes kept as sent).
 */
import type {
  ScimFault,
  ScimGroupRow,
  ScimGroupState,
  ScimUserRow,
  ScimUserState,
} from "../db/scim.ts";
import { ATTRIBUTES_MAX_BYTES } from "../db/scim.ts";
import { pastLimits } from "./limits.ts";
import {
  BCRYPT_MAX_BYTES,
  codePoints,
  emailIsValid,
  nameCharactersAllowed,
  usernameCharactersAllowed,
  utf8Bytes,
} from "../users/account-rules.ts";
import { userTag } from "../users/listing.ts";
import {
  type AttrDef,
  ENTERPRISE_ATTRIBUTES,
  ENTERPRISE_SCHEMA,
  findAttr,
  GROUP_ATTRIBUTES,
  GROUP_SCHEMA,
  USER_ATTRIBUTES,
  USER_SCHEMA,
} from "./schema.ts";

type Json = Record<string, unknown>;

const fault = (
  kind: ScimFault["fault"],
  detail: string,
): ScimFault => ({ fault: kind, detail });

const isObject = (v: unknown): v is Json =>
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

/** The user's tag: the ETag `GET /api/users/{id}` gives. */
export const userVersion = (row: ScimUserRow) =>
  userTag(row.id, row.version, row.expired);

export const groupVersion = (row: ScimGroupRow) =>
  `W/"g${row.id}.${row.version}"`;

/** The user as a connection reads it: what it wrote, and what the service knows. */
export function userResource(row: ScimUserRow, base: string): Json {
  const { [ENTERPRISE_SCHEMA]: enterprise, ...attrs } = row.attributes;
  return {
    schemas: enterprise ? [USER_SCHEMA, ENTERPRISE_SCHEMA] : [USER_SCHEMA],
    id: String(row.id),
    ...row.externalId !== null && { externalId: row.externalId },
    userName: row.username,
    ...attrs,
    name: isObject(attrs.name) ? attrs.name : { formatted: row.name },
    displayName: typeof attrs.displayName === "string"
      ? attrs.displayName
      : row.name,
    emails: Array.isArray(attrs.emails)
      ? attrs.emails
      : [{ value: row.email, type: "work", primary: true }],
    active: row.active,
    // Read-only: membership is changed through the groups.
    ...row.groups.length > 0 && {
      groups: row.groups.map((g) => ({
        value: String(g.value),
        display: g.display,
        type: "direct",
        $ref: `${base}/Groups/${g.value}`,
      })),
    },
    ...enterprise !== undefined && { [ENTERPRISE_SCHEMA]: enterprise },
    meta: {
      resourceType: "User",
      created: row.created,
      lastModified: row.modified,
      version: userVersion(row),
      location: `${base}/Users/${row.id}`,
    },
  };
}

export function groupResource(row: ScimGroupRow, base: string): Json {
  return {
    schemas: [GROUP_SCHEMA],
    id: String(row.id),
    ...row.externalId !== null && { externalId: row.externalId },
    displayName: row.displayName,
    ...row.members && {
      members: row.members.map((m) => ({
        value: String(m.value),
        display: m.display,
        type: "User",
        $ref: `${base}/Users/${m.value}`,
      })),
    },
    meta: {
      resourceType: "Group",
      created: row.created,
      lastModified: row.modified,
      version: groupVersion(row),
      location: `${base}/Groups/${row.id}`,
    },
  };
}

/**
 * A value as its definition types it: names spelled as the schema spells
 * them, sub-attributes no schema defines dropped, booleans sent as
 * `"True"`/`"False"` read as booleans. A wrong type is a fault.
 */
function typed(
  def: AttrDef & { element?: boolean },
  v: unknown,
  at: string,
): unknown | ScimFault {
  if (v === null) return undefined;
  if (def.multi) {
    if (!Array.isArray(v)) return fault("invalidValue", `${at} must be a list`);
    const out: unknown[] = [];
    for (const [i, item] of v.entries()) {
      const one = typed(
        { ...def, multi: false, element: true },
        item,
        `${at}[${i}]`,
      );
      if (isFaultValue(one)) return one;
      if (one !== undefined) out.push(one);
    }
    return out;
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
      if (!isObject(v)) return fault("invalidValue", `${at} must be an object`);
      const out: Json = {};
      for (const [key, value] of Object.entries(v)) {
        const sub = findAttr(def.subs ?? [], key);
        if (!sub) continue;
        const one = typed(sub, value, `${at}.${sub.name}`);
        if (isFaultValue(one)) return one;
        if (one !== undefined) out[sub.name] = one;
      }
      return out;
    }
    case "boolean": {
      const b = booleanOf(v);
      return b === undefined
        ? fault("invalidValue", `${at} must be true or false`)
        : b;
    }
    default:
      return typeof v === "string"
        ? v
        : fault("invalidValue", `${at} must be a string`);
  }
}

const isFaultValue = (v: unknown): v is ScimFault =>
  isObject(v) && "fault" in v && "detail" in v;

/**
 * The attributes of a body as the schemas define them, spelled as they
 * spell them; attributes no schema defines are left out (RFC 7644 3.3).
 */
function known(
  body: Json,
  defs: AttrDef[],
  at = "",
): Json | ScimFault {
  const out: Json = {};
  for (const [key, value] of Object.entries(body)) {
    if (key.toLowerCase() === ENTERPRISE_SCHEMA.toLowerCase()) {
      if (value === null) continue;
      if (!isObject(value)) {
        return fault("invalidValue", `${ENTERPRISE_SCHEMA} must be an object`);
      }
      const ext = known(value, ENTERPRISE_ATTRIBUTES, `${ENTERPRISE_SCHEMA}:`);
      if (isFaultValue(ext)) return ext;
      out[ENTERPRISE_SCHEMA] = ext;
      continue;
    }
    const def = findAttr(defs, key);
    if (!def) continue;
    const one = typed(def, value, at + def.name);
    if (isFaultValue(one)) return one;
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

/** A user as a body (POST, PUT, or a PATCH's result) says it, and the password it sets. */
export function userFromBody(
  body: unknown,
  current?: ScimUserRow,
): { state: ScimUserState; password?: string } | ScimFault {
  if (!isObject(body)) {
    return fault("invalidSyntax", "the body must be a JSON object");
  }
  const externalId = text(body, "externalId");
  if (
    externalId !== undefined && externalId !== null &&
    typeof externalId !== "string"
  ) return fault("invalidValue", "externalId must be a string");
  const over = pastLimits(body, USER_ATTRIBUTES);
  if (over) return over;
  const attrs = known(body, USER_ATTRIBUTES);
  if (isFaultValue(attrs)) return attrs;
  const { userName, active, password, groups: _, ...kept } = attrs;
  if (typeof userName !== "string" || userName.trim() === "") {
    return fault("invalidValue", "userName is required");
  }
  const username = userName.trim();
  if (
    codePoints(username) > 254 || /\p{Cc}/u.test(username) ||
    !usernameCharactersAllowed(username)
  ) {
    return fault(
      "invalidValue",
      "userName must be at most 254 characters, without control, invisible or formatting characters, and not mix confusable scripts",
    );
  }
  if (password !== undefined) {
    const p = password as string;
    if (codePoints(p) < 8) {
      return fault("invalidValue", "password must be at least 8 characters");
    }
    if (utf8Bytes(p) > BCRYPT_MAX_BYTES || p.includes("\u0000")) {
      return fault(
        "invalidValue",
        "password must be at most 72 bytes, without NUL",
      );
    }
  }
  const name = nameOf(kept, username);
  if (codePoints(name) > 200 || !nameCharactersAllowed(name)) {
    return fault(
      "invalidValue",
      "the name must be at most 200 characters, without control characters",
    );
  }
  const email = emailOf(kept, username);
  if (email === undefined) {
    return fault(
      "invalidValue",
      "an e-mail address is required (emails, or a userName that is one)",
    );
  }
  if (!emailIsValid(email)) {
    return fault("invalidValue", `${email} is not a valid e-mail address`);
  }
  if (utf8Bytes(JSON.stringify(kept)) > ATTRIBUTES_MAX_BYTES) {
    return fault(
      "invalidValue",
      "the attributes kept for a user are larger than 16 KiB",
    );
  }
  return {
    state: {
      username,
      name,
      email,
      // An absent `active` leaves it as it is (a new user is active).
      active: (active as boolean | undefined) ?? current?.active ?? true,
      externalId: (externalId as string | null | undefined) ?? null,
      attributes: kept,
    },
    ...password !== undefined && { password: password as string },
  };
}

/** name.formatted, else displayName, else given and family name, else userName. */
function nameOf(attrs: Json, username: string): string {
  const name = isObject(attrs.name) ? attrs.name : {};
  const formatted = typeof name.formatted === "string"
    ? name.formatted.trim()
    : "";
  if (formatted) return formatted;
  const display = typeof attrs.displayName === "string"
    ? attrs.displayName.trim()
    : "";
  if (display) return display;
  const joined = [name.givenName, name.familyName]
    .filter((p): p is string => typeof p === "string" && p.trim() !== "")
    .map((p) => p.trim()).join(" ");
  return joined || username;
}

/** The primary e-mail, else the first, else userName when it is an address. */
function emailOf(attrs: Json, username: string): string | undefined {
  const emails = Array.isArray(attrs.emails)
    ? attrs.emails.filter((e): e is Json =>
      isObject(e) && typeof e.value === "string" && e.value.trim() !== ""
    )
    : [];
  const chosen = emails.find((e) => e.primary === true) ?? emails[0];
  if (chosen) return (chosen.value as string).trim();
  return emailIsValid(username) ? username : undefined;
}

/** The largest id a member can have. */
const MAX_ID = 2 ** 31 - 1;

/** A group as a body (POST, PUT, or a PATCH's result) says it. */
export function groupFromBody(body: unknown): ScimGroupState | ScimFault {
  if (!isObject(body)) {
    return fault("invalidSyntax", "the body must be a JSON object");
  }
  const externalId = text(body, "externalId");
  if (
    externalId !== undefined && externalId !== null &&
    typeof externalId !== "string"
  ) return fault("invalidValue", "externalId must be a string");
  const over = pastLimits(body, GROUP_ATTRIBUTES);
  if (over) return over;
  const attrs = known(body, GROUP_ATTRIBUTES);
  if (isFaultValue(attrs)) return attrs;
  const displayName = attrs.displayName;
  if (typeof displayName !== "string" || displayName.trim() === "") {
    return fault("invalidValue", "displayName is required");
  }
  if (codePoints(displayName) > 256 || !nameCharactersAllowed(displayName)) {
    return fault(
      "invalidValue",
      "displayName must be at most 256 characters, without control characters",
    );
  }
  const members: number[] = [];
  for (const m of (attrs.members as Json[] | undefined) ?? []) {
    const id = memberId(m.value);
    if (id === undefined) {
      return fault(
        "invalidValue",
        `members: ${JSON.stringify(m.value ?? null)} is no user's id`,
      );
    }
    members.push(id);
  }
  return {
    displayName: displayName.trim(),
    externalId: (externalId as string | null | undefined) ?? null,
    members,
  };
}

export function memberId(value: unknown): number | undefined {
  if (typeof value !== "string" || !/^[1-9][0-9]{0,9}$/.test(value)) {
    return undefined;
  }
  const n = Number(value);
  return n <= MAX_ID ? n : undefined;
}

/**
 * The resource with only `attributes` (and `id`, `schemas`, which are
 * always returned), or without `excluded`: paths as `userName`,
 * `name.givenName`, a schema URN and `:` before either.
 */
export function project(
  resource: Json,
  attributes: string[] | undefined,
  excluded: string[] | undefined,
): Json {
  const split = (path: string): string[] => {
    const lower = path.toLowerCase();
    for (const urn of [USER_SCHEMA, GROUP_SCHEMA]) {
      if (lower.startsWith(urn.toLowerCase() + ":")) {
        return split(path.slice(urn.length + 1));
      }
    }
    if (lower.startsWith(ENTERPRISE_SCHEMA.toLowerCase())) {
      const rest = path.slice(ENTERPRISE_SCHEMA.length + 1);
      return rest ? [ENTERPRISE_SCHEMA, ...rest.split(".")] : [
        ENTERPRISE_SCHEMA,
      ];
    }
    return path.split(".");
  };
  const keyOf = (o: Json, name: string) =>
    Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
  if (attributes && attributes.length > 0) {
    const out: Json = { schemas: resource.schemas, id: resource.id };
    for (const path of attributes) {
      const [head, ...rest] = split(path);
      const key = keyOf(resource, head);
      if (key === undefined) continue;
      const value = resource[key];
      if (rest.length === 0) {
        out[key] = value;
        continue;
      }
      const pick = (v: unknown): unknown => {
        if (Array.isArray(v)) return v.map(pick);
        if (!isObject(v)) return undefined;
        const sub = keyOf(v, rest.join("."));
        return sub === undefined ? {} : { [sub]: v[sub] };
      };
      const picked = pick(value);
      const prior = out[key];
      out[key] = Array.isArray(picked)
        ? picked.map((p, i) => ({
          ...(Array.isArray(prior) ? prior[i] as Json : {}),
          ...p as Json,
        }))
        : { ...(isObject(prior) ? prior : {}), ...picked as Json };
    }
    return out;
  }
  if (excluded && excluded.length > 0) {
    const out: Json = structuredClone(resource);
    for (const path of excluded) {
      const [head, ...rest] = split(path);
      const key = keyOf(out, head);
      if (key === undefined || key === "id" || key === "schemas") continue;
      if (rest.length === 0) {
        delete out[key];
        continue;
      }
      const drop = (v: unknown) => {
        if (Array.isArray(v)) return v.forEach(drop);
        if (!isObject(v)) return;
        const sub = keyOf(v, rest.join("."));
        if (sub !== undefined) delete v[sub];
      };
      drop(out[key]);
    }
    return out;
  }
  return resource;
}
