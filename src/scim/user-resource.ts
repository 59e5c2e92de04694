/**
 * Users as SCIM resources, and SCIM bodies as users: userName, the name, the
 * primary e-mail, active, password, externalId, the attributes kept as sent.
 */
import type { ScimRefusal, ScimUserRow, ScimUserState } from "../db/scim.ts";
import { ATTRIBUTES_MAX_BYTES } from "../db/scim.ts";
import {
  BCRYPT_MAX_BYTES,
  codePoints,
  emailIsValid,
  nameCharactersAllowed,
  usernameCharactersAllowed,
  usernameFitsLength,
  utf8Bytes,
} from "../users/account-rules.ts";
import { userTag } from "../users/listing.ts";
import {
  type Profile,
  PROFILE_FIELDS,
  profileValue,
} from "../accounts/fields.ts";
import { canonicalJson } from "../audit/chain.ts";
import { isObject, type Json, readBody } from "./body.ts";
import { isRefusal, refuse } from "../refusal.ts";
import { ENTERPRISE_SCHEMA, USER_ATTRIBUTES, USER_SCHEMA } from "./schema.ts";

/** The user's tag: the ETag `GET /api/users/{id}` gives. */
export const userVersion = (row: ScimUserRow) =>
  userTag(row.id, row.version, row.expired);

/** What the read of a user says of it. */
type UserFacts = Pick<
  ScimUserState,
  "username" | "name" | "email" | "attributes" | "profile"
>;

/**
 * What a user's attributes do not say of the account, shown in their
 * place: the name as `name.formatted` and `displayName` when the attributes
 * give another (a user made or renamed through /api), the e-mail as the
 * only one of `emails` when they hold none. Once a client assigns them,
 * the attributes say it all, and what it removed stays unassigned.
 */
function shownForLack(user: UserFacts): Json {
  const attrs = user.attributes;
  const nameUnsaid = user.name !== nameOf(attrs, user.username);
  const enterprise = isObject(attrs[ENTERPRISE_SCHEMA])
    ? attrs[ENTERPRISE_SCHEMA]
    : {};
  const profileUnsaid = PROFILE_FIELDS.filter((f) =>
    user.profile[f.wire] !== null && enterprise[f.scim.attribute] === undefined
  );
  return {
    ...!isObject(attrs.name) && nameUnsaid &&
      { name: { formatted: user.name } },
    ...typeof attrs.displayName !== "string" && nameUnsaid &&
      { displayName: user.name },
    ...!hasEmail(attrs) &&
      { emails: [{ value: user.email, type: "work", primary: true }] },
    ...profileUnsaid.length > 0 && {
      [ENTERPRISE_SCHEMA]: {
        ...enterprise,
        ...Object.fromEntries(
          profileUnsaid.map((f) => [f.scim.attribute, user.profile[f.wire]]),
        ),
      },
    },
  };
}

/** The user as a connection reads it: what it wrote, and what the service knows. */
export function userResource(row: ScimUserRow, base: string): Json {
  const { [ENTERPRISE_SCHEMA]: enterprise, ...attrs } = {
    ...row.attributes,
    ...shownForLack(row),
  };
  return {
    schemas: enterprise ? [USER_SCHEMA, ENTERPRISE_SCHEMA] : [USER_SCHEMA],
    id: String(row.id),
    ...row.externalId !== null && { externalId: row.externalId },
    userName: row.username,
    ...attrs,
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

/** The keys whose read `shownForLack` decides together. */
const SHOWN_TOGETHER = [["name", "displayName"], ["emails"], [
  ENTERPRISE_SCHEMA,
]];

/**
 * `user`'s attributes without what the read of `current` showed for lack
 * of them and comes back as it was shown (a PATCH applies to the resource
 * as read; a PUT often sends it back), where the read shows the same
 * without them: kept, it would change the version for nothing, and would
 * no longer follow the account's name and e-mail.
 */
function withoutEchoes(user: UserFacts, current: UserFacts): Json {
  const before = shownForLack(current);
  const read = (attributes: Json) => {
    const lack = shownForLack({ ...user, attributes });
    return (k: string) => canonicalJson(lack[k] ?? attributes[k]);
  };
  let attributes = user.attributes;
  for (const keys of SHOWN_TOGETHER) {
    const echoed = keys.filter((k) =>
      k in before && canonicalJson(attributes[k]) === canonicalJson(before[k])
    );
    if (echoed.length === 0) continue;
    const trial = { ...attributes };
    for (const k of echoed) delete trial[k];
    const [was, now] = [read(attributes), read(trial)];
    if (keys.every((k) => was(k) === now(k))) attributes = trial;
  }
  return attributes;
}

/** A user as a body (POST, PUT, or a PATCH's result) says it, and the password it sets. */
export function userFromBody(
  body: unknown,
  current?: ScimUserRow,
): { state: ScimUserState; password?: string } | ScimRefusal {
  const read = readBody(body, USER_ATTRIBUTES);
  if (isRefusal(read)) return read;
  const { externalId, attrs } = read;
  const { userName, active, password, groups: _, ...kept } = attrs;
  // A list of e-mails without one is none: the userName stands in.
  if (!hasEmail(kept)) delete kept.emails;
  if (typeof userName !== "string" || userName.trim() === "") {
    return refuse("invalidValue", "userName is required");
  }
  const username = userName.trim();
  // The account's rules (account-rules.ts), as every door applies them.
  if (
    !usernameFitsLength(username) || !usernameCharactersAllowed(username)
  ) {
    return refuse(
      "invalidValue",
      "userName must be at most 64 characters, without control, invisible or formatting characters, and not mix confusable scripts",
    );
  }
  if (password !== undefined) {
    const p = password as string;
    if (codePoints(p) < 8) {
      return refuse("invalidValue", "password must be at least 8 characters");
    }
    if (utf8Bytes(p) > BCRYPT_MAX_BYTES || p.includes("\u0000")) {
      return refuse(
        "invalidValue",
        "password must be at most 72 bytes, without NUL",
      );
    }
  }
  const name = nameOf(kept, username);
  if (codePoints(name) > 200 || !nameCharactersAllowed(name)) {
    return refuse(
      "invalidValue",
      "the name must be at most 200 characters, without control characters",
    );
  }
  const email = emailOf(kept, username);
  if (email === undefined) {
    return refuse(
      "invalidValue",
      "an e-mail address is required (emails, or a userName that is one)",
    );
  }
  if (!emailIsValid(email)) {
    return refuse("invalidValue", `${email} is not a valid e-mail address`);
  }
  if (utf8Bytes(JSON.stringify(kept)) > ATTRIBUTES_MAX_BYTES) {
    return refuse(
      "invalidValue",
      "the attributes kept for a user are larger than 16 KiB",
    );
  }
  const profile = profileOf(kept);
  if (isRefusal(profile)) return profile;
  const facts = { username, name, email, attributes: kept, profile };
  return {
    state: {
      ...facts,
      ...current && { attributes: withoutEchoes(facts, current) },
      // An absent `active` leaves it as it is (a new user is active).
      active: (active as boolean | undefined) ?? current?.active ?? true,
      externalId: (externalId as string | null | undefined) ?? null,
    },
    ...password !== undefined && { password: password as string },
  };
}

/**
 * The profile fields (src/accounts/fields.ts) as the enterprise extension
 * carries them; one it leaves out is unset.
 */
function profileOf(attrs: Json): Profile | ScimRefusal {
  const enterprise = isObject(attrs[ENTERPRISE_SCHEMA])
    ? attrs[ENTERPRISE_SCHEMA]
    : {};
  const profile: Record<string, string | null> = {};
  for (const f of PROFILE_FIELDS) {
    const value = profileValue(f, enterprise[f.scim.attribute] ?? null);
    if (value === "invalid" || value === "tooLong") {
      return refuse(
        "invalidValue",
        `${f.scim.attribute} must be at most ${f.maxLength} characters, without control characters`,
      );
    }
    profile[f.wire] = value;
  }
  return profile as Profile;
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

/** The elements of `emails` with an address. */
const addresses = (attrs: Json): Json[] =>
  Array.isArray(attrs.emails)
    ? attrs.emails.filter((e): e is Json =>
      isObject(e) && typeof e.value === "string" && e.value.trim() !== ""
    )
    : [];

const hasEmail = (attrs: Json) => addresses(attrs).length > 0;

/** The primary e-mail, else the first, else userName when it is an address. */
function emailOf(attrs: Json, username: string): string | undefined {
  const emails = addresses(attrs);
  const chosen = emails.find((e) => e.primary === true) ?? emails[0];
  if (chosen) return (chosen.value as string).trim();
  return emailIsValid(username) ? username : undefined;
}
