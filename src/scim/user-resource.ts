/**
 * Users as SCIM resources, and SCIM bodies as users: userName, the name, the
 * primary e-mail, active, password, externalId, the attributes kept as sent.
 */
import type { ScimFault, ScimUserRow, ScimUserState } from "../db/scim.ts";
import { ATTRIBUTES_MAX_BYTES } from "../db/scim.ts";
import {
  BCRYPT_MAX_BYTES,
  codePoints,
  emailIsValid,
  nameCharactersAllowed,
  usernameCharactersAllowed,
  utf8Bytes,
} from "../users/account-rules.ts";
import { userTag } from "../users/listing.ts";
import { fault, isFaultValue, isObject, type Json, readBody } from "./body.ts";
import { ENTERPRISE_SCHEMA, USER_ATTRIBUTES, USER_SCHEMA } from "./schema.ts";

/** The user's tag: the ETag `GET /api/users/{id}` gives. */
export const userVersion = (row: ScimUserRow) =>
  userTag(row.id, row.version, row.expired);

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

/** A user as a body (POST, PUT, or a PATCH's result) says it, and the password it sets. */
export function userFromBody(
  body: unknown,
  current?: ScimUserRow,
): { state: ScimUserState; password?: string } | ScimFault {
  const read = readBody(body, USER_ATTRIBUTES);
  if (isFaultValue(read)) return read;
  const { externalId, attrs } = read;
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
